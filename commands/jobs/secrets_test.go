package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"cairn/commands"
	"cairn/commands/commandstest"
	"cairn/commands/jobs"
	"cairn/domain"
	"cairn/domain/job"
	"cairn/sal/catalog"
)

// Secrets a submitter marks are sealed before the log sees them, open only
// through Reveal, and count in the command's fingerprint without being
// recorded in it.
func TestSubmitSealsSecrets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := seed(t, newFixture(t), "")
	const pw, token = "pw-0d6f1e0c", "tok-9b2c77aa"
	m := commands.Meta{Actor: "user:op", CommandID: "submit-secret-exec"}
	execJob := jobs.Submit{JobID: "secret-exec", Target: job.Target{NodeID: "n1"},
		Spec:    job.Spec{Kind: job.KindExec, Exec: &job.Exec{Argv: []string{"env"}, Env: map[string]string{"PLAIN": "1"}}},
		Secrets: jobs.Secrets{Env: map[string]string{"DB_PASSWORD": pw}}}
	step(t)(f.h.Submit(ctx, m, execJob))
	actionJob := jobs.Submit{JobID: "secret-action", Target: job.Target{NodeID: "n1"},
		Spec:    job.Spec{Kind: job.KindAction, Action: catalog.ActionFileWrite, Args: json.RawMessage(`{"path":"/srv/a","mode":"0600"}`)},
		Secrets: jobs.Secrets{Args: json.RawMessage(`{"content":"` + token + `"}`)}}
	step(t)(f.h.Submit(ctx, commands.Meta{Actor: "user:op"}, actionJob))

	for _, secret := range []string{pw, token} {
		if n := commandstest.CountContaining(t, f.s, secret); n != 0 {
			t.Errorf("%d events hold %q in clear", n, secret)
		}
	}
	ej, _, err := commands.Load[job.Job](ctx, f.s, domain.JobStream, "secret-exec")
	if err != nil || !ej.Spec.Sealed() || ej.Spec.Exec.Env["PLAIN"] != "1" || len(ej.Spec.Exec.SecretEnv) != 1 {
		t.Fatalf("recorded exec job %+v %v", ej.Spec.Exec, err)
	}
	clear, err := f.h.Reveal(ej.Spec)
	if err != nil || clear.Sealed() || clear.Exec.Env["DB_PASSWORD"] != pw || clear.Exec.Env["PLAIN"] != "1" {
		t.Fatalf("revealed %+v %v", clear.Exec, err)
	}
	if len(ej.Spec.Exec.SecretEnv) != 1 {
		t.Fatal("Reveal changed the spec it was given")
	}
	aj, _, _ := commands.Load[job.Job](ctx, f.s, domain.JobStream, "secret-action")
	clear, err = f.h.Reveal(aj.Spec)
	var args map[string]string
	if err != nil || json.Unmarshal(clear.Args, &args) != nil || args["content"] != token || args["path"] != "/srv/a" {
		t.Fatalf("revealed args %s %v", clear.Args, err)
	}

	// A retry of the command with the same secrets is the same command; with
	// others it is another, refused under the same id.
	if _, err := f.h.Submit(ctx, m, execJob); err != nil {
		t.Fatalf("retry with the same secrets: %v", err)
	}
	changed := execJob
	changed.Secrets = jobs.Secrets{Env: map[string]string{"DB_PASSWORD": "other"}}
	if _, err := f.h.Submit(ctx, m, changed); !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("retry with other secrets: %v, want a conflict", err)
	}

	// A sealed value moved to another place does not open.
	moved := ej.Spec.Clone()
	moved.Exec.SecretEnv["OTHER"] = moved.Exec.SecretEnv["DB_PASSWORD"]
	delete(moved.Exec.SecretEnv, "DB_PASSWORD")
	if _, err := f.h.Reveal(moved); err == nil {
		t.Fatal("a sealed value renamed to another variable opened")
	}
}

func TestSubmitRefusesMisplacedSecrets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := seed(t, newFixture(t), "")
	write := job.Spec{Kind: job.KindAction, Action: catalog.ActionFileWrite, Args: json.RawMessage(`{"path":"/srv/a"}`)}
	for _, c := range []struct {
		name  string
		in    jobs.Submit
		field string
	}{
		{"env on an action job", jobs.Submit{Spec: job.Spec{Kind: job.KindAction, Action: catalog.ActionFileWrite, Args: json.RawMessage(`{"path":"/srv/a","content":""}`)}, Secrets: jobs.Secrets{Env: map[string]string{"A": "x"}}}, "secrets.env"},
		{"args on an exec job", jobs.Submit{Spec: echo, Secrets: jobs.Secrets{Args: json.RawMessage(`{"a":1}`)}}, "secrets.args"},
		{"args not an object", jobs.Submit{Spec: write, Secrets: jobs.Secrets{Args: json.RawMessage(`["content"]`)}}, "secrets.args"},
		{"args the catalogue refuses", jobs.Submit{Spec: write, Secrets: jobs.Secrets{Args: json.RawMessage(`{"nope":"x"}`)}}, "spec.args"},
		{"a variable both secret and not", jobs.Submit{
			Spec:    job.Spec{Kind: job.KindExec, Exec: &job.Exec{Argv: []string{"env"}, Env: map[string]string{"A": "1"}}},
			Secrets: jobs.Secrets{Env: map[string]string{"A": "x"}}}, "spec.exec.secretEnv"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.in.Target = job.Target{NodeID: "n1"}
			_, err := f.h.Submit(ctx, commands.Meta{Actor: "user:op"}, c.in)
			var ve *domain.ValidationError
			if !errors.As(err, &ve) || ve.Field != c.field {
				t.Fatalf("got %v, want an invalid %s", err, c.field)
			}
		})
	}

	// A server without a key refuses secrets rather than record them.
	keyless := jobs.NewHandlers(f.s, time.Now, commandstest.IDs("keyless"), mustValidator(t), nil)
	_, err := keyless.Submit(ctx, commands.Meta{Actor: "user:op"}, jobs.Submit{Spec: echo, Target: job.Target{NodeID: "n1"},
		Secrets: jobs.Secrets{Env: map[string]string{"A": "x"}}})
	if !errors.Is(err, jobs.ErrNoSealer) {
		t.Fatalf("without a key: %v", err)
	}
	if n := commandstest.CountContaining(t, f.s, `"nope"`); n != 0 {
		t.Fatalf("a refused submission was recorded")
	}
}

func mustValidator(t *testing.T) *catalog.Validator {
	t.Helper()
	v, err := catalog.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	return v
}
