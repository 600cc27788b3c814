package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"cairn/commands"
	"cairn/domain"
	"cairn/domain/job"
	"cairn/sal/catalog"
)

// Defaults of a submission.
const (
	DefaultTimeout = 10 * time.Minute
	DefaultGrace   = 10 * time.Second
)

// Submit asks to run a job. Zero Timeout and Grace take the defaults; Retry
// defaults to no retries.
type Submit struct {
	// JobID is optional; a job id that exists is refused with
	// *DuplicateJobError, so a caller can make "run once" safe by choosing it.
	JobID string `json:"jobId,omitempty"`
	// ParentID is set by the fan-out process manager on a child job.
	ParentID string          `json:"parentId,omitempty"`
	Spec     job.Spec        `json:"spec"`
	Target   job.Target      `json:"target"`
	Timeout  time.Duration   `json:"timeout,omitempty"`
	Grace    time.Duration   `json:"grace,omitempty"`
	Retry    job.RetryPolicy `json:"retry"`
	Queue    string          `json:"queue,omitempty"`
	// Secrets are sealed into the spec before anything is recorded.
	Secrets Secrets `json:"-"`
}

// Submit checks the job's arguments against the catalogue and its target
// node, then queues it, submitted by meta.Actor.
func (h *Handlers) Submit(ctx context.Context, meta commands.Meta, in Submit) (commands.Outcome, error) {
	if in.Timeout == 0 {
		in.Timeout = DefaultTimeout
	}
	if in.Grace == 0 {
		in.Grace = DefaultGrace
	}
	if err := h.checkSpec(in.Spec, in.Secrets); err != nil {
		return commands.Outcome{}, err
	}
	spec, err := h.sealSecrets(in.Spec, in.Secrets)
	if err != nil {
		return commands.Outcome{}, err
	}
	switch {
	case in.Timeout > catalog.MaxTimeoutMS*time.Millisecond:
		return commands.Outcome{}, invalid("timeout", fmt.Sprintf("must be at most %s", catalog.MaxTimeoutMS*time.Millisecond))
	case in.Grace > catalog.MaxKillGraceMS*time.Millisecond:
		return commands.Outcome{}, invalid("grace", fmt.Sprintf("must be at most %s", catalog.MaxKillGraceMS*time.Millisecond))
	}
	if in.Target.NodeID != "" {
		if _, err := commands.RequireNode(ctx, h.store, in.Target.NodeID); err != nil {
			return commands.Outcome{}, err
		}
	}
	if err := commands.RequireLocation(ctx, h.store, in.Target.Location); err != nil {
		return commands.Outcome{}, err
	}
	id, err := commands.EntityID(ctx, h.store, &meta, domain.JobStream, in.JobID, h.newID)
	if err != nil {
		return commands.Outcome{}, err
	}
	return h.run(ctx, meta, id, h.fingerprintOf(in), func(j job.Job, at time.Time) ([]domain.Event, error) {
		if j.Exists() {
			return nil, &DuplicateJobError{JobID: id}
		}
		return j.Submit(job.Submit{
			JobID: id, ParentID: in.ParentID, Spec: spec, Target: in.Target,
			Timeout: in.Timeout, Grace: in.Grace, Retry: in.Retry, Queue: in.Queue,
			Submitter: meta.Actor, At: at,
		})
	})
}

// checkSpec validates the job's arguments against the schema the agent
// enforces, so a job that would be refused on the node never runs anywhere.
// Specs the catalogue cannot judge (no exec or script part) are left to the
// domain, which names what is missing.
func (h *Handlers) checkSpec(s job.Spec, secrets Secrets) error {
	var name, field string
	var args json.RawMessage
	switch s.Kind {
	case job.KindAction:
		if s.Action == catalog.JobExec || s.Action == catalog.JobScript {
			return invalid("spec.action", fmt.Sprintf("%q is a job kind, not an action: submit a job of kind %s", s.Action, s.Action))
		}
		name, field = s.Action, "spec.args"
		var err error
		if args, err = withSecretArgs(s.Args, secrets.Args); err != nil {
			return err
		}
	case job.KindExec:
		if s.Exec == nil {
			return nil
		}
		name, field = catalog.JobExec, "spec.exec"
		args = mustJSON(struct {
			Argv  []string          `json:"argv"`
			Env   map[string]string `json:"env,omitempty"`
			Stdin string            `json:"stdin,omitempty"`
			Dir   string            `json:"dir,omitempty"`
		}{s.Exec.Argv, withSecretEnv(s.Exec.Env, secrets.Env), s.Exec.Stdin, s.Exec.Workdir})
	case job.KindScript:
		if s.Script == nil {
			return nil
		}
		name, field = catalog.JobScript, "spec.script"
		args = mustJSON(struct {
			Interpreter string `json:"interpreter"`
			Body        string `json:"body"`
		}{s.Script.Interpreter, s.Script.Body})
	default:
		return nil
	}
	err := h.catalog.Validate(name, args)
	var unknown *catalog.UnknownActionError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &unknown):
		return invalid("spec.action", err.Error())
	default:
		return invalid(field, err.Error())
	}
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic("jobs: encode arguments: " + err.Error())
	}
	return b
}

func invalid(field, reason string) error {
	return &domain.ValidationError{Field: field, Reason: reason}
}
