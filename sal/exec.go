package sal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// Stream names used in LogChunk.
const (
	StreamStdout = "stdout"
	StreamStderr = "stderr"
)

// LogChunk is a piece of a command's output.
type LogChunk struct {
	// Seq numbers the chunks of one Run from 1, across both streams, in the
	// order they were read; per stream it is therefore increasing too.
	Seq    uint64    `json:"seq"`
	Stream string    `json:"stream"`
	Data   []byte    `json:"data"`
	Time   time.Time `json:"time"`
	// EOF marks the last chunk of its stream; its Data may be empty.
	EOF bool `json:"eof,omitempty"`
}

// LogSink receives a command's output while it runs. Run calls Log from one
// goroutine at a time, so implementations need no locking of their own; a
// slow sink slows the command's output rather than losing any.
//
// Chunks hold whole lines where possible: a line is split only when it is
// longer than MaxChunkBytes or stays unterminated for FlushInterval (a
// progress indicator, a prompt). Joining the Data of one stream in Seq order
// gives back the exact output.
type LogSink interface {
	Log(LogChunk)
}

// LogSinkFunc adapts a function to LogSink.
type LogSinkFunc func(LogChunk)

// Log calls f.
func (f LogSinkFunc) Log(c LogChunk) { f(c) }

// LineSink returns a LogSink that reassembles chunks into lines (without their
// newline) and hands each to fn with its stream name. A final line without a
// newline is delivered at its stream's end. Like any sink given to Run, it
// expects one call at a time.
func LineSink(fn func(stream, line string)) LogSink {
	pending := map[string][]byte{}
	return LogSinkFunc(func(c LogChunk) {
		buf := append(pending[c.Stream], c.Data...)
		for {
			i := bytes.IndexByte(buf, '\n')
			if i < 0 {
				break
			}
			fn(c.Stream, string(buf[:i]))
			buf = buf[i+1:]
		}
		if c.EOF && len(buf) > 0 {
			fn(c.Stream, string(buf))
			buf = nil
		}
		pending[c.Stream] = append([]byte(nil), buf...)
	})
}

const (
	// MaxChunkBytes bounds one LogChunk's Data.
	MaxChunkBytes = 32 << 10
	// FlushInterval is how long an unterminated line is held back waiting for
	// its newline before it is sent as it is.
	FlushInterval = 250 * time.Millisecond
	// outputDrain bounds the wait for output after the process group is gone:
	// only a process that left the group (setsid) can still hold the pipes.
	outputDrain = 2 * time.Second
)

// ExecSpec describes a command run to completion by Run.
type ExecSpec struct {
	Argv     []string
	Env      map[string]string // set on top of the agent's environment
	ClearEnv bool              // start from an empty environment instead
	Stdin    []byte            // nil means no input (/dev/null)
	Dir      string            // empty means the System's WorkDir
	// Timeout ends the command after this long; zero means only ctx ends it.
	Timeout time.Duration
	// KillGrace is the time between SIGTERM and SIGKILL; zero means the
	// System's KillGrace.
	KillGrace time.Duration
}

// ExecResult is how a command ended and what it used.
type ExecResult struct {
	PID int `json:"pid"`
	// ExitCode is the process's exit status, or -1 if a signal ended it.
	ExitCode int `json:"exit_code"`
	// Signal names the signal that ended the process, e.g. "SIGKILL".
	Signal    string `json:"signal,omitempty"`
	TimedOut  bool   `json:"timed_out"`
	Cancelled bool   `json:"cancelled"`
	// CPUTime is user plus system time of the process and the children it
	// waited for.
	CPUTime    time.Duration `json:"cpu_time_ns"`
	UserTime   time.Duration `json:"user_time_ns"`
	SystemTime time.Duration `json:"system_time_ns"`
	// PeakMemoryBytes is the largest resident set of the process or of any
	// child it waited for.
	PeakMemoryBytes uint64        `json:"peak_memory_bytes"`
	StartedAt       time.Time     `json:"started_at"`
	Duration        time.Duration `json:"duration_ns"`
	StdoutBytes     int64         `json:"stdout_bytes"`
	StderrBytes     int64         `json:"stderr_bytes"`
}

// Succeeded reports whether the command ran to completion with status 0.
func (r ExecResult) Succeeded() bool {
	return r.ExitCode == 0 && r.Signal == "" && !r.TimedOut && !r.Cancelled
}

// Run starts a command in its own process group, streams its output to sink
// (which may be nil), and waits for it. On timeout or when ctx ends, the whole
// group gets SIGTERM and, after the kill grace, SIGKILL. Processes the command
// leaves behind in its group are stopped the same way when it exits, so a job
// never outlives itself; long-running work belongs to StartDetached or the
// Supervisor.
//
// The error is non-nil only when the command could not be run at all (bad
// spec, program not found); a command that fails, times out or is cancelled
// returns a nil error and says so in ExecResult.
func (s *System) Run(ctx context.Context, spec ExecSpec, sink LogSink) (ExecResult, error) {
	if err := checkArgv(spec.Argv); err != nil {
		return ExecResult{}, err
	}
	if spec.Timeout < 0 || spec.KillGrace < 0 {
		return ExecResult{}, fmt.Errorf("sal: %w: timeout and kill grace must not be negative", ErrInvalidSpec)
	}
	if err := ctx.Err(); err != nil {
		return ExecResult{}, fmt.Errorf("sal: run %q: %w", spec.Argv[0], err)
	}
	env, err := buildEnv(spec.Env, spec.ClearEnv)
	if err != nil {
		return ExecResult{}, err
	}
	grace := spec.KillGrace
	if grace == 0 {
		grace = s.killGrace
	}

	outR, outW, err := os.Pipe()
	if err != nil {
		return ExecResult{}, fmt.Errorf("sal: run %q: create pipe: %w", spec.Argv[0], err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return ExecResult{}, fmt.Errorf("sal: run %q: create pipe: %w", spec.Argv[0], err)
	}

	cmd := exec.Command(spec.Argv[0], spec.Argv[1:]...)
	cmd.Env = env
	cmd.Dir = s.dirOrDefault(spec.Dir)
	cmd.Stdout = outW
	cmd.Stderr = errW
	if spec.Stdin != nil {
		cmd.Stdin = bytes.NewReader(spec.Stdin)
		// If a child keeps stdin open after the command exits, stop copying
		// rather than wait for it.
		cmd.WaitDelay = time.Second
	}
	// Its own group, so that timeouts reach the children a shell starts.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	started := time.Now()
	err = cmd.Start()
	// The child has its own copies of the write ends; ours must go, or the
	// readers would never see EOF.
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return ExecResult{}, fmt.Errorf("sal: run %q: %w", spec.Argv[0], err)
	}
	pgid := cmd.Process.Pid

	em := &emitter{sink: sink}
	var readers sync.WaitGroup
	var outBytes, errBytes int64
	readers.Add(2)
	go func() { defer readers.Done(); outBytes = pump(outR, StreamStdout, em) }()
	go func() { defer readers.Done(); errBytes = pump(errR, StreamStderr, em) }()

	waitCh := make(chan error, 1)
	go func() { waitCh <- cmd.Wait() }()

	res := ExecResult{PID: pgid, StartedAt: started.UTC()}
	var timeout <-chan time.Time
	if spec.Timeout > 0 {
		t := time.NewTimer(spec.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var waitErr error
	exited := false
	select {
	case waitErr = <-waitCh:
		exited = true
	case <-timeout:
		res.TimedOut = true
	case <-ctx.Done():
		res.Cancelled = true
	}
	// On timeout or cancel this stops the command; after a normal exit, what
	// it left running in its group.
	stopGroup(pgid, grace)
	if !exited {
		waitErr = <-waitCh
	}

	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(outputDrain):
		// Closing unblocks the readers; they report what they had.
		outR.Close()
		errR.Close()
		<-drained
	}
	outR.Close()
	errR.Close()

	res.Duration = time.Since(started)
	res.StdoutBytes, res.StderrBytes = outBytes, errBytes
	fillResult(&res, cmd.ProcessState)
	if cmd.ProcessState == nil {
		return res, fmt.Errorf("sal: run %q: wait: %w", spec.Argv[0], waitErr)
	}
	return res, nil
}

func fillResult(res *ExecResult, ps *os.ProcessState) {
	if ps == nil {
		res.ExitCode = -1
		return
	}
	res.ExitCode = ps.ExitCode()
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		res.Signal = signalName(ws.Signal())
	}
	res.UserTime = ps.UserTime()
	res.SystemTime = ps.SystemTime()
	res.CPUTime = res.UserTime + res.SystemTime
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok && ru.Maxrss > 0 {
		res.PeakMemoryBytes = uint64(ru.Maxrss)
		// Linux and most Unixes count ru_maxrss in KiB; macOS in bytes.
		if runtime.GOOS != "darwin" {
			res.PeakMemoryBytes *= 1024
		}
	}
}

// stopGroup ends every process of the group: SIGTERM, then SIGKILL for those
// still alive after grace. It returns once none is left, so a caller can
// promise that nothing of a job runs on, or after a last short wait for
// processes that SIGKILL cannot end at once (stuck in uninterruptible I/O).
func stopGroup(pgid int, grace time.Duration) {
	if !groupAlive(pgid) {
		return
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	if waitGroupGone(pgid, grace) {
		return
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	waitGroupGone(pgid, killWait)
}

// killWait bounds the wait for a group to vanish after SIGKILL.
const killWait = 2 * time.Second

func waitGroupGone(pgid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if !groupAlive(pgid) {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// emitter numbers chunks and serialises calls into the sink.
type emitter struct {
	mu   sync.Mutex
	seq  uint64
	sink LogSink
}

func (e *emitter) emit(stream string, data []byte, eof bool) {
	if len(data) == 0 && !eof {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.seq++
	if e.sink != nil {
		e.sink.Log(LogChunk{
			Seq:    e.seq,
			Stream: stream,
			Data:   bytes.Clone(data),
			Time:   time.Now().UTC(),
			EOF:    eof,
		})
	}
}

// pump reads one stream until EOF (or until its pipe is closed under it),
// sending complete lines at once and holding an unterminated tail back for
// up to FlushInterval. It returns the number of bytes read.
func pump(r *os.File, stream string, em *emitter) int64 {
	var total int64
	buf := make([]byte, 0, MaxChunkBytes)
	for {
		if len(buf) > 0 {
			_ = r.SetReadDeadline(time.Now().Add(FlushInterval))
		} else {
			_ = r.SetReadDeadline(time.Time{})
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		total += int64(n)
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			em.emit(stream, buf[:i+1], false)
			buf = buf[:copy(buf, buf[i+1:])]
		}
		if len(buf) == cap(buf) {
			em.emit(stream, buf, false)
			buf = buf[:0]
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				em.emit(stream, buf, false)
				buf = buf[:0]
				continue
			}
			// EOF, or the pipe was closed because output took too long to end.
			em.emit(stream, buf, true)
			return total
		}
	}
}

// ScriptSpec describes an inline script run by RunScript.
type ScriptSpec struct {
	// Interpreter is "sh", "bash" or "python3", looked up in PATH.
	Interpreter string
	Body        string
	Args        []string
	Env         map[string]string
	ClearEnv    bool
	Stdin       []byte
	Dir         string
	Timeout     time.Duration
	KillGrace   time.Duration
}

// RunScript writes the body to a private temporary file, runs it with the
// interpreter through Run, and removes the file. A file rather than stdin
// keeps stdin free for the script's own input.
func (s *System) RunScript(ctx context.Context, spec ScriptSpec, sink LogSink) (ExecResult, error) {
	switch spec.Interpreter {
	case "sh", "bash", "python3":
	default:
		return ExecResult{}, fmt.Errorf("sal: %w: interpreter %q is not supported; use sh, bash or python3", ErrInvalidSpec, spec.Interpreter)
	}
	if spec.Body == "" {
		return ExecResult{}, fmt.Errorf("sal: %w: the script body is empty", ErrInvalidSpec)
	}
	interp, err := exec.LookPath(spec.Interpreter)
	if err != nil {
		return ExecResult{}, fmt.Errorf("sal: interpreter %s is not installed on this node: %w", spec.Interpreter, err)
	}
	dir, err := os.MkdirTemp(s.scriptDir, "cairn-script-")
	if err != nil {
		return ExecResult{}, fmt.Errorf("sal: create script directory: %w", err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "script")
	if err := os.WriteFile(path, []byte(spec.Body), 0o700); err != nil {
		return ExecResult{}, fmt.Errorf("sal: write script: %w", err)
	}
	return s.Run(ctx, ExecSpec{
		Argv:      append([]string{interp, path}, spec.Args...),
		Env:       spec.Env,
		ClearEnv:  spec.ClearEnv,
		Stdin:     spec.Stdin,
		Dir:       spec.Dir,
		Timeout:   spec.Timeout,
		KillGrace: spec.KillGrace,
	}, sink)
}
