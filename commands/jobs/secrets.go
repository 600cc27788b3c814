package jobs

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"cairn/domain/job"
)

// Secrets are the secret parts of a submission, in clear. They are sealed
// before anything is recorded: the log, the read models and the API hold
// only ciphertext, and only the agent a job is leased to receives them in
// clear (Reveal).
type Secrets struct {
	// Args is a JSON object merged over the spec's arguments (action jobs).
	Args json.RawMessage `json:"args,omitempty"`
	// Env are environment variables of an exec job.
	Env map[string]string `json:"env,omitempty"`
}

// IsZero reports whether there is no secret.
func (s Secrets) IsZero() bool { return len(s.Args) == 0 && len(s.Env) == 0 }

// The purposes job secrets are sealed for. They do not name the job: a
// fan-out's children and a schedule's firings carry their parent's sealed
// values.
const argsPurpose = "cairn job secret\x00args"

func envPurpose(name string) string { return "cairn job secret\x00env\x00" + name }

// ErrNoSealer refuses secrets on a server that was given no key to seal
// them with.
var ErrNoSealer = errors.New("this server keeps no secrets key, so a job cannot carry secrets")

// sealSecrets returns the spec with the secrets sealed into it.
func (h *Handlers) sealSecrets(spec job.Spec, s Secrets) (job.Spec, error) {
	if s.IsZero() {
		return spec, nil
	}
	if h.sealer == nil {
		return spec, ErrNoSealer
	}
	spec = spec.Clone()
	if len(s.Args) > 0 {
		if spec.Kind != job.KindAction {
			return spec, invalid("secrets.args", "only an action job takes secret arguments")
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(s.Args, &obj); err != nil || obj == nil {
			return spec, invalid("secrets.args", "must be a JSON object of arguments")
		}
		sealed, err := h.sealer.Seal(argsPurpose, s.Args)
		if err != nil {
			return spec, err
		}
		spec.SecretArgs = sealed
	}
	if len(s.Env) > 0 {
		if spec.Kind != job.KindExec || spec.Exec == nil {
			return spec, invalid("secrets.env", "only an exec job takes a secret environment")
		}
		spec.Exec.SecretEnv = make(map[string]json.RawMessage, len(s.Env))
		for _, name := range slices.Sorted(maps.Keys(s.Env)) {
			sealed, err := h.sealer.Seal(envPurpose(name), []byte(s.Env[name]))
			if err != nil {
				return spec, err
			}
			spec.Exec.SecretEnv[name] = sealed
		}
	}
	return spec, nil
}

// Reveal returns a spec with its sealed values opened: secret arguments
// merged over the others, secret environment variables among the rest. It
// is for the agent a job is leased to, and no one else: never record or
// log what it returns.
func (h *Handlers) Reveal(spec job.Spec) (job.Spec, error) {
	if !spec.Sealed() {
		return spec, nil
	}
	if h.sealer == nil {
		return spec, ErrNoSealer
	}
	spec = spec.Clone()
	if len(spec.SecretArgs) > 0 {
		clear, err := h.sealer.Open(argsPurpose, spec.SecretArgs)
		if err != nil {
			return spec, fmt.Errorf("the job's secret arguments: %w", err)
		}
		args, err := mergeObjects(spec.Args, clear)
		if err != nil {
			return spec, err
		}
		spec.Args, spec.SecretArgs = args, nil
	}
	if x := spec.Exec; x != nil && len(x.SecretEnv) > 0 {
		if x.Env == nil {
			x.Env = map[string]string{}
		}
		for name, sealed := range x.SecretEnv {
			clear, err := h.sealer.Open(envPurpose(name), sealed)
			if err != nil {
				return spec, fmt.Errorf("the job's secret variable %s: %w", name, err)
			}
			x.Env[name] = string(clear)
		}
		x.SecretEnv = nil
	}
	return spec, nil
}

// fingerprinted is a submission as its fingerprint sees it: the secrets
// as a keyed hash, so the log holds nothing a guesser could check guesses
// against.
type fingerprinted struct {
	Submit
	Secrets []byte `json:"secrets,omitempty"`
}

func (h *Handlers) fingerprintOf(in Submit) any {
	if in.Secrets.IsZero() || h.sealer == nil {
		return in
	}
	return fingerprinted{Submit: in, Secrets: h.sealer.MAC(mustJSON(in.Secrets))}
}

// withSecretArgs is an action's arguments with the secret ones merged
// over them, in clear: what the catalogue checks.
func withSecretArgs(args, secret json.RawMessage) (json.RawMessage, error) {
	if len(secret) == 0 {
		return args, nil
	}
	return mergeObjects(args, secret)
}

func mergeObjects(base, over json.RawMessage) (json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	if len(base) > 0 {
		if err := json.Unmarshal(base, &out); err != nil {
			return nil, invalid("spec.args", "must be a JSON object when the job has secret arguments")
		}
	}
	var extra map[string]json.RawMessage
	if err := json.Unmarshal(over, &extra); err != nil {
		return nil, invalid("secrets.args", "must be a JSON object of arguments")
	}
	maps.Copy(out, extra)
	return json.Marshal(out)
}

// withSecretEnv is an exec job's environment with the secret variables
// among the rest, in clear: what the catalogue checks.
func withSecretEnv(env, secret map[string]string) map[string]string {
	if len(secret) == 0 {
		return env
	}
	out := maps.Clone(env)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, secret)
	return out
}
