package sal

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/shirou/gopsutil/v4/process"
	"golang.org/x/sys/unix"
)

// ErrNoSuchProcess is wrapped by errors about a pid that is not running.
var ErrNoSuchProcess = errors.New("no such process")

// ProcessInfo is one row of the process list.
type ProcessInfo struct {
	PID     int32    `json:"pid"`
	PPID    int32    `json:"ppid"`
	Name    string   `json:"name"`
	Cmdline []string `json:"cmdline"`
	User    string   `json:"user"`
	Status  string   `json:"status"`
	// CPUPercent is the average over the process's lifetime, of one core.
	CPUPercent float64   `json:"cpu_percent"`
	RSSBytes   uint64    `json:"rss_bytes"`
	CreateTime time.Time `json:"create_time"`
}

// ProcessStats is the detail of one process.
type ProcessStats struct {
	ProcessInfo
	Exe              string  `json:"exe,omitempty"`
	Cwd              string  `json:"cwd,omitempty"`
	NumThreads       int32   `json:"num_threads"`
	NumFDs           int32   `json:"num_fds"`
	CPUUserSeconds   float64 `json:"cpu_user_seconds"`
	CPUSystemSeconds float64 `json:"cpu_system_seconds"`
	VMSBytes         uint64  `json:"vms_bytes"`
	MemoryPercent    float32 `json:"memory_percent"`
	ReadBytes        uint64  `json:"read_bytes"`
	WriteBytes       uint64  `json:"write_bytes"`
}

// Processes lists the running processes, sorted by pid. Processes that exit
// while the list is read are left out; fields the agent may not read (another
// user's I/O, say) stay zero.
func (s *System) Processes(ctx context.Context) ([]ProcessInfo, error) {
	procs, err := process.ProcessesWithContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("sal: list processes: %w", err)
	}
	users := userCache{}
	out := make([]ProcessInfo, 0, len(procs))
	for _, p := range procs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		info, err := processInfo(ctx, p, users)
		if err != nil {
			continue
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out, nil
}

// Process returns the detail of one process, or an error wrapping
// ErrNoSuchProcess.
func (s *System) Process(ctx context.Context, pid int) (ProcessStats, error) {
	if pid <= 0 {
		return ProcessStats{}, fmt.Errorf("sal: process %d: %w: a pid must be positive", pid, ErrInvalidSpec)
	}
	p, err := process.NewProcessWithContext(ctx, int32(pid))
	if err != nil {
		return ProcessStats{}, fmt.Errorf("sal: process %d: %w", pid, ErrNoSuchProcess)
	}
	info, err := processInfo(ctx, p, userCache{})
	if err != nil {
		return ProcessStats{}, fmt.Errorf("sal: process %d: %w", pid, err)
	}
	st := ProcessStats{ProcessInfo: info}
	st.Exe, _ = p.ExeWithContext(ctx)
	st.Cwd, _ = p.CwdWithContext(ctx)
	st.NumThreads, _ = p.NumThreadsWithContext(ctx)
	st.NumFDs, _ = p.NumFDsWithContext(ctx)
	if t, err := p.TimesWithContext(ctx); err == nil {
		st.CPUUserSeconds = t.User
		st.CPUSystemSeconds = t.System
	}
	if mi, err := p.MemoryInfoWithContext(ctx); err == nil {
		st.VMSBytes = mi.VMS
	}
	st.MemoryPercent, _ = p.MemoryPercentWithContext(ctx)
	if io, err := p.IOCountersWithContext(ctx); err == nil {
		st.ReadBytes = io.ReadBytes
		st.WriteBytes = io.WriteBytes
	}
	return st, nil
}

// userCache avoids re-reading the user database for every process of a list.
type userCache map[uint32]string

func (c userCache) name(uid uint32) string {
	if n, ok := c[uid]; ok {
		return n
	}
	n := strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(n); err == nil {
		n = u.Username
	}
	c[uid] = n
	return n
}

func processInfo(ctx context.Context, p *process.Process, users userCache) (ProcessInfo, error) {
	info := ProcessInfo{PID: p.Pid}
	var err error
	// The name comes first: if it cannot be read the process has gone.
	if info.Name, err = p.NameWithContext(ctx); err != nil {
		return info, fmt.Errorf("%w: %v", ErrNoSuchProcess, err)
	}
	info.PPID, _ = p.PpidWithContext(ctx)
	if info.Cmdline, err = p.CmdlineSliceWithContext(ctx); err != nil || info.Cmdline == nil {
		info.Cmdline = []string{}
	}
	if uids, err := p.UidsWithContext(ctx); err == nil && len(uids) > 0 {
		info.User = users.name(uids[0])
	}
	if st, err := p.StatusWithContext(ctx); err == nil && len(st) > 0 {
		info.Status = st[0]
	}
	info.CPUPercent, _ = p.CPUPercentWithContext(ctx)
	if mi, err := p.MemoryInfoWithContext(ctx); err == nil {
		info.RSSBytes = mi.RSS
	}
	if ms, err := p.CreateTimeWithContext(ctx); err == nil {
		info.CreateTime = time.UnixMilli(ms).UTC()
	}
	return info, nil
}

// Signal sends sig to one process. Pids below 1 are refused because kill(2)
// reads them as "a process group" or "every process".
func (s *System) Signal(ctx context.Context, pid int, sig syscall.Signal) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if pid <= 0 {
		return fmt.Errorf("sal: signal pid %d: %w: a pid must be positive", pid, ErrInvalidSpec)
	}
	if err := syscall.Kill(pid, sig); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("sal: signal %s to %d: %w", signalName(sig), pid, ErrNoSuchProcess)
		}
		return fmt.Errorf("sal: signal %s to %d: %w", signalName(sig), pid, err)
	}
	return nil
}

// ParseSignal turns "SIGTERM" or "TERM" into the signal.
func ParseSignal(name string) (syscall.Signal, error) {
	n := strings.ToUpper(strings.TrimSpace(name))
	if !strings.HasPrefix(n, "SIG") {
		n = "SIG" + n
	}
	sig := unix.SignalNum(n)
	if sig == 0 {
		return 0, fmt.Errorf("sal: unknown signal %q: %w", name, ErrInvalidSpec)
	}
	return sig, nil
}

func signalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return "signal " + strconv.Itoa(int(sig))
}

// ProcessSpec describes a long-running process started by StartDetached or the
// Supervisor.
type ProcessSpec struct {
	Argv []string
	// Env is set on top of the agent's environment (or of an empty one when
	// ClearEnv is true).
	Env      map[string]string
	ClearEnv bool
	// Dir is the working directory; empty means the System's WorkDir.
	Dir string
	// StdoutPath and StderrPath receive the output, appended; they must be
	// inside the file roots. Empty means discard.
	StdoutPath string
	StderrPath string
}

// StartDetached starts a process in a new session (and so its own process
// group) that survives the caller: ctx bounds only the start. It returns the
// pid, which is also the process group id.
func (s *System) StartDetached(ctx context.Context, spec ProcessSpec) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	cmd, closeFiles, err := s.buildDetached(spec)
	if err != nil {
		return 0, err
	}
	err = cmd.Start()
	closeFiles()
	if err != nil {
		return 0, fmt.Errorf("sal: start %q: %w", spec.Argv[0], err)
	}
	// Reap the process when it exits so it does not linger as a zombie while
	// the agent runs; if the agent exits first, init adopts it.
	go func() { _ = cmd.Wait() }()
	return cmd.Process.Pid, nil
}

// buildDetached prepares a command for StartDetached and the Supervisor. The
// caller must call closeFiles after Start: the child keeps its own copies.
func (s *System) buildDetached(spec ProcessSpec) (cmd *exec.Cmd, closeFiles func(), err error) {
	if err := checkArgv(spec.Argv); err != nil {
		return nil, nil, err
	}
	env, err := buildEnv(spec.Env, spec.ClearEnv)
	if err != nil {
		return nil, nil, err
	}
	var files []*os.File
	closeFiles = func() {
		for _, f := range files {
			_ = f.Close()
		}
	}
	open := func(path string) (*os.File, error) {
		if path == "" {
			return nil, nil
		}
		f, err := s.openAppend(path)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
		return f, nil
	}
	stdout, err := open(spec.StdoutPath)
	if err != nil {
		closeFiles()
		return nil, nil, err
	}
	stderr, err := open(spec.StderrPath)
	if err != nil {
		closeFiles()
		return nil, nil, err
	}
	cmd = exec.Command(spec.Argv[0], spec.Argv[1:]...)
	cmd.Env = env
	cmd.Dir = s.dirOrDefault(spec.Dir)
	// A nil *os.File must not become a non-nil io.Writer holding nil.
	if stdout != nil {
		cmd.Stdout = stdout
	}
	if stderr != nil {
		cmd.Stderr = stderr
	}
	// A new session detaches it from the agent's terminal and process group,
	// so signals aimed at the agent (Ctrl-C, a service manager's stop) do not
	// reach it, and its own group can be signalled as a whole.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return cmd, closeFiles, nil
}

// openAppend opens an output file inside the roots for appending, creating it
// (and not its directory) if needed.
func (s *System) openAppend(path string) (*os.File, error) {
	rp, err := s.resolve(path)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(rp.root)
	if err != nil {
		return nil, fmt.Errorf("sal: open file root %s: %w", rp.root, err)
	}
	defer root.Close()
	f, err := root.OpenFile(rp.rel, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return nil, fmt.Errorf("sal: open output file %s: %w", path, unwrapPathError(err))
	}
	return f, nil
}

func (s *System) dirOrDefault(dir string) string {
	if dir != "" {
		return dir
	}
	return s.workDir
}

func checkArgv(argv []string) error {
	if len(argv) == 0 || argv[0] == "" {
		return fmt.Errorf("sal: %w: argv must name a program", ErrInvalidSpec)
	}
	return nil
}

// buildEnv merges extra over the agent's environment (or none), in a stable
// order so that identical specs give identical environments.
func buildEnv(extra map[string]string, clear bool) ([]string, error) {
	base := []string{}
	if !clear {
		base = os.Environ()
	}
	if len(extra) == 0 {
		return base, nil
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(extra[k], 0) {
			return nil, fmt.Errorf("sal: %w: environment variable %q: names must be non-empty without '=' or NUL, values without NUL", ErrInvalidSpec, k)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	env := make([]string, 0, len(base)+len(keys))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, overridden := extra[k]; !overridden {
			env = append(env, kv)
		}
	}
	for _, k := range keys {
		env = append(env, k+"="+extra[k])
	}
	return env, nil
}

// unwrapPathError drops the *fs.PathError wrapper, whose path is relative to
// a root and would confuse the reader; callers name the full path themselves.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
