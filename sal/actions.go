package sal

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"time"
	"unicode/utf8"

	"cairn/sal/catalog"
)

// UnknownActionError and InvalidArgumentsError are defined by the catalogue,
// so the control plane and the agent report bad jobs with the same types.
type (
	UnknownActionError    = catalog.UnknownActionError
	InvalidArgumentsError = catalog.InvalidArgumentsError
)

// Handler runs one action on arguments already validated against its schema.
type Handler func(ctx context.Context, args json.RawMessage) (json.RawMessage, error)

// ActionInfo names an action and gives the JSON Schema of its arguments.
type ActionInfo struct {
	Name   string `json:"name"`
	Schema string `json:"schema"`
}

// ActionSchemas returns every action name with its argument schema; see
// package catalog, which the control plane can import on its own.
func ActionSchemas() map[string]string { return catalog.ActionSchemas() }

// JobSchemas returns the argument schemas of the "exec" and "script" job kinds.
func JobSchemas() map[string]string { return catalog.JobSchemas() }

// Actions lists the actions Invoke accepts, sorted by name.
func (s *System) Actions() []ActionInfo {
	schemas := catalog.ActionSchemas()
	out := make([]ActionInfo, 0, len(schemas))
	for name, schema := range schemas {
		out = append(out, ActionInfo{Name: name, Schema: schema})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Invoke validates args against the action's schema and runs it, returning
// its result as JSON. It returns *UnknownActionError for a name outside the
// catalogue and *InvalidArgumentsError for arguments that break the schema;
// other errors come from the action itself (e.g. *PathOutsideRootsError).
func (s *System) Invoke(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	h, ok := s.handlers[name]
	if !ok {
		return nil, &UnknownActionError{Name: name}
	}
	if err := s.validator.Validate(name, args); err != nil {
		return nil, err
	}
	return h(ctx, args)
}

// DecodeExec validates the arguments of an "exec" job and turns them into an
// ExecSpec for Run.
func (s *System) DecodeExec(args json.RawMessage) (ExecSpec, error) {
	var a execArgs
	if err := s.decodeJob(catalog.JobExec, args, &a); err != nil {
		return ExecSpec{}, err
	}
	return ExecSpec{
		Argv:      a.Argv,
		Env:       a.Env,
		ClearEnv:  a.ClearEnv,
		Stdin:     a.stdin(),
		Dir:       a.Dir,
		Timeout:   ms(a.TimeoutMS),
		KillGrace: ms(a.KillGraceMS),
	}, nil
}

// DecodeScript validates the arguments of a "script" job and turns them into
// a ScriptSpec for RunScript.
func (s *System) DecodeScript(args json.RawMessage) (ScriptSpec, error) {
	var a scriptArgs
	if err := s.decodeJob(catalog.JobScript, args, &a); err != nil {
		return ScriptSpec{}, err
	}
	return ScriptSpec{
		Interpreter: a.Interpreter,
		Body:        a.Body,
		Args:        a.Args,
		Env:         a.Env,
		ClearEnv:    a.ClearEnv,
		Stdin:       a.stdin(),
		Dir:         a.Dir,
		Timeout:     ms(a.TimeoutMS),
		KillGrace:   ms(a.KillGraceMS),
	}, nil
}

func (s *System) decodeJob(kind string, args json.RawMessage, v any) error {
	if err := s.validator.Validate(kind, args); err != nil {
		return err
	}
	return decodeArgs(kind, args, v)
}

// runArgs are the fields shared by exec and script jobs.
type runArgs struct {
	Env         map[string]string `json:"env"`
	ClearEnv    bool              `json:"clear_env"`
	Stdin       *string           `json:"stdin"`
	Dir         string            `json:"dir"`
	TimeoutMS   int64             `json:"timeout_ms"`
	KillGraceMS int64             `json:"kill_grace_ms"`
}

func (a runArgs) stdin() []byte {
	if a.Stdin == nil {
		return nil
	}
	return []byte(*a.Stdin)
}

type execArgs struct {
	Argv []string `json:"argv"`
	runArgs
}

type scriptArgs struct {
	Interpreter string   `json:"interpreter"`
	Body        string   `json:"body"`
	Args        []string `json:"args"`
	runArgs
}

type pidArgs struct {
	PID int `json:"pid"`
}

type signalArgs struct {
	PID    int    `json:"pid"`
	Signal string `json:"signal"`
}

type processStartArgs struct {
	Argv     []string          `json:"argv"`
	Env      map[string]string `json:"env"`
	ClearEnv bool              `json:"clear_env"`
	Dir      string            `json:"dir"`
	Stdout   string            `json:"stdout"`
	Stderr   string            `json:"stderr"`
}

func (a processStartArgs) spec() ProcessSpec {
	return ProcessSpec{Argv: a.Argv, Env: a.Env, ClearEnv: a.ClearEnv, Dir: a.Dir, StdoutPath: a.Stdout, StderrPath: a.Stderr}
}

type supervisorStartArgs struct {
	Name string `json:"name"`
	processStartArgs
	Restart *struct {
		MaxRestarts      *int  `json:"max_restarts"`
		InitialBackoffMS int64 `json:"initial_backoff_ms"`
		MaxBackoffMS     int64 `json:"max_backoff_ms"`
		ResetAfterMS     int64 `json:"reset_after_ms"`
	} `json:"restart"`
}

type supervisorNameArgs struct {
	Name    string `json:"name"`
	GraceMS int64  `json:"grace_ms"`
}

type pathArgs struct {
	Path string `json:"path"`
}

type fileReadArgs struct {
	Path     string `json:"path"`
	MaxBytes int64  `json:"max_bytes"`
}

type fileWriteArgs struct {
	Path     string `json:"path"`
	Content  string `json:"content"`
	Encoding string `json:"encoding"`
	Mode     string `json:"mode"`
}

type fileRemoveArgs struct {
	Path      string `json:"path"`
	Recursive bool   `json:"recursive"`
}

type fileMkdirArgs struct {
	Path string `json:"path"`
	Mode string `json:"mode"`
}

type tcpArgs struct {
	Host      string `json:"host"`
	Port      int    `json:"port"`
	TimeoutMS int64  `json:"timeout_ms"`
}

type httpArgs struct {
	URL          string `json:"url"`
	ExpectStatus int    `json:"expect_status"`
	TimeoutMS    int64  `json:"timeout_ms"`
}

type dnsArgs struct {
	Name string `json:"name"`
}

// FileContent is the result of sal.file.read. Content is the text itself
// when it is valid UTF-8, otherwise its base64 encoding.
type FileContent struct {
	Path     string `json:"path"`
	Size     int    `json:"size"`
	Encoding string `json:"encoding"` // "utf-8" or "base64"
	Content  string `json:"content"`
}

// RemoveResult is the result of sal.file.remove.
type RemoveResult struct {
	Path    string `json:"path"`
	Removed bool   `json:"removed"` // false when there was nothing to remove
}

// DNSResult is the result of sal.net.dns.
type DNSResult struct {
	Name      string   `json:"name"`
	Addresses []string `json:"addresses"`
}

// StartResult is the result of sal.process.start.
type StartResult struct {
	PID int `json:"pid"`
}

// SignalResult is the result of sal.process.signal.
type SignalResult struct {
	PID    int    `json:"pid"`
	Signal string `json:"signal"`
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// decodeArgs fills v from schema-valid args. Unknown fields are refused here
// too, which catches an argument struct that lags behind its schema.
func decodeArgs(action string, args json.RawMessage, v any) error {
	if t := bytes.TrimSpace(args); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		args = json.RawMessage(`{}`)
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &InvalidArgumentsError{Action: action, Problems: []string{"/: " + err.Error()}}
	}
	return nil
}

func parseMode(action, mode string) (os.FileMode, error) {
	if mode == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(mode, 8, 32)
	if err != nil || n&^uint64(os.ModePerm) != 0 {
		return 0, &InvalidArgumentsError{Action: action, Problems: []string{"/mode: " + strconv.Quote(mode) + " is not octal permission bits like \"0644\""}}
	}
	return os.FileMode(n), nil
}

// handle builds a Handler that decodes args into A, calls fn and encodes its
// result.
func handle[A, R any](name string, fn func(context.Context, A) (R, error)) Handler {
	return func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
		var a A
		if err := decodeArgs(name, raw, &a); err != nil {
			return nil, err
		}
		r, err := fn(ctx, a)
		if err != nil {
			return nil, err
		}
		return json.Marshal(r)
	}
}

type noArgs struct{}

func (s *System) actionHandlers() map[string]Handler {
	return map[string]Handler{
		catalog.ActionHost: handle(catalog.ActionHost, func(ctx context.Context, _ noArgs) (HostInfo, error) {
			return s.Host(ctx)
		}),
		catalog.ActionCPU: handle(catalog.ActionCPU, func(ctx context.Context, _ noArgs) (CPUInfo, error) {
			return s.CPU(ctx)
		}),
		catalog.ActionMemory: handle(catalog.ActionMemory, func(ctx context.Context, _ noArgs) (MemoryInfo, error) {
			return s.Memory(ctx)
		}),
		catalog.ActionDisks: handle(catalog.ActionDisks, func(ctx context.Context, _ noArgs) ([]DiskInfo, error) {
			return s.Disks(ctx)
		}),
		catalog.ActionNetInterfaces: handle(catalog.ActionNetInterfaces, func(ctx context.Context, _ noArgs) ([]NetInterface, error) {
			return s.NetInterfaces(ctx)
		}),
		catalog.ActionLoad: handle(catalog.ActionLoad, func(ctx context.Context, _ noArgs) (LoadAvg, error) {
			return s.Load(ctx)
		}),
		catalog.ActionFacts: handle(catalog.ActionFacts, func(ctx context.Context, _ noArgs) (Facts, error) {
			return s.Facts(ctx)
		}),
		catalog.ActionStats: handle(catalog.ActionStats, func(ctx context.Context, _ noArgs) (Stats, error) {
			return s.Stats(ctx)
		}),
		catalog.ActionProcesses: handle(catalog.ActionProcesses, func(ctx context.Context, _ noArgs) ([]ProcessInfo, error) {
			return s.Processes(ctx)
		}),
		catalog.ActionProcessGet: handle(catalog.ActionProcessGet, func(ctx context.Context, a pidArgs) (ProcessStats, error) {
			return s.Process(ctx, a.PID)
		}),
		catalog.ActionProcessSignal: handle(catalog.ActionProcessSignal, func(ctx context.Context, a signalArgs) (SignalResult, error) {
			if a.Signal == "" {
				a.Signal = "SIGTERM"
			}
			sig, err := ParseSignal(a.Signal)
			if err != nil {
				return SignalResult{}, err
			}
			return SignalResult{PID: a.PID, Signal: signalName(sig)}, s.Signal(ctx, a.PID, sig)
		}),
		catalog.ActionProcessStart: handle(catalog.ActionProcessStart, func(ctx context.Context, a processStartArgs) (StartResult, error) {
			pid, err := s.StartDetached(ctx, a.spec())
			return StartResult{PID: pid}, err
		}),
		catalog.ActionSupervisorStart: handle(catalog.ActionSupervisorStart, func(ctx context.Context, a supervisorStartArgs) (SupervisedStatus, error) {
			policy := DefaultRestartPolicy()
			if r := a.Restart; r != nil {
				if r.MaxRestarts != nil {
					policy.MaxRestarts = *r.MaxRestarts
				}
				if r.InitialBackoffMS > 0 {
					policy.InitialBackoff = ms(r.InitialBackoffMS)
				}
				if r.MaxBackoffMS > 0 {
					policy.MaxBackoff = ms(r.MaxBackoffMS)
				}
				if r.ResetAfterMS > 0 {
					policy.ResetAfter = ms(r.ResetAfterMS)
				}
			}
			return s.supervisor.StartSupervised(ctx, a.Name, a.spec(), policy)
		}),
		catalog.ActionSupervisorStop: handle(catalog.ActionSupervisorStop, func(ctx context.Context, a supervisorNameArgs) (SupervisedStatus, error) {
			if err := s.supervisor.Stop(a.Name, ms(a.GraceMS)); err != nil {
				return SupervisedStatus{}, err
			}
			return s.supervisor.Status(a.Name)
		}),
		catalog.ActionSupervisorStatus: handle(catalog.ActionSupervisorStatus, func(ctx context.Context, a supervisorNameArgs) ([]SupervisedStatus, error) {
			if a.Name == "" {
				return s.supervisor.List(), nil
			}
			st, err := s.supervisor.Status(a.Name)
			if err != nil {
				return nil, err
			}
			return []SupervisedStatus{st}, nil
		}),
		catalog.ActionFileRead: handle(catalog.ActionFileRead, func(ctx context.Context, a fileReadArgs) (FileContent, error) {
			data, err := s.ReadFile(ctx, a.Path, a.MaxBytes)
			if err != nil {
				return FileContent{}, err
			}
			fc := FileContent{Path: a.Path, Size: len(data), Encoding: "utf-8", Content: string(data)}
			if !utf8.Valid(data) {
				fc.Encoding = "base64"
				fc.Content = base64.StdEncoding.EncodeToString(data)
			}
			return fc, nil
		}),
		catalog.ActionFileWrite: handle(catalog.ActionFileWrite, func(ctx context.Context, a fileWriteArgs) (FileInfo, error) {
			mode, err := parseMode(catalog.ActionFileWrite, a.Mode)
			if err != nil {
				return FileInfo{}, err
			}
			data := []byte(a.Content)
			if a.Encoding == "base64" {
				if data, err = base64.StdEncoding.DecodeString(a.Content); err != nil {
					return FileInfo{}, &InvalidArgumentsError{Action: catalog.ActionFileWrite, Problems: []string{"/content: not valid base64: " + err.Error()}}
				}
			}
			return s.WriteFile(ctx, a.Path, data, mode)
		}),
		catalog.ActionFileStat: handle(catalog.ActionFileStat, func(ctx context.Context, a pathArgs) (FileInfo, error) {
			return s.Stat(ctx, a.Path)
		}),
		catalog.ActionFileRemove: handle(catalog.ActionFileRemove, func(ctx context.Context, a fileRemoveArgs) (RemoveResult, error) {
			if a.Recursive {
				// RemoveAll does not say whether anything was there.
				_, statErr := s.Stat(ctx, a.Path)
				if err := s.RemoveAll(ctx, a.Path); err != nil {
					return RemoveResult{}, err
				}
				return RemoveResult{Path: a.Path, Removed: !errors.Is(statErr, fs.ErrNotExist)}, nil
			}
			err := s.Remove(ctx, a.Path)
			if errors.Is(err, fs.ErrNotExist) {
				// Removal is idempotent: a repeated step after a crash does no harm.
				return RemoveResult{Path: a.Path}, nil
			}
			if err != nil {
				return RemoveResult{}, err
			}
			return RemoveResult{Path: a.Path, Removed: true}, nil
		}),
		catalog.ActionFileMkdir: handle(catalog.ActionFileMkdir, func(ctx context.Context, a fileMkdirArgs) (FileInfo, error) {
			mode, err := parseMode(catalog.ActionFileMkdir, a.Mode)
			if err != nil {
				return FileInfo{}, err
			}
			return s.MkdirAll(ctx, a.Path, mode)
		}),
		catalog.ActionNetTCP: handle(catalog.ActionNetTCP, func(ctx context.Context, a tcpArgs) (TCPCheckResult, error) {
			return s.TCPConnect(ctx, a.Host, a.Port, ms(a.TimeoutMS))
		}),
		catalog.ActionNetHTTP: handle(catalog.ActionNetHTTP, func(ctx context.Context, a httpArgs) (HTTPCheckResult, error) {
			return s.HTTPGet(ctx, a.URL, a.ExpectStatus, ms(a.TimeoutMS))
		}),
		catalog.ActionNetDNS: handle(catalog.ActionNetDNS, func(ctx context.Context, a dnsArgs) (DNSResult, error) {
			addrs, err := s.DNSLookup(ctx, a.Name)
			return DNSResult{Name: a.Name, Addresses: addrs}, err
		}),
	}
}
