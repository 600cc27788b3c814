package sal

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sort"
	"sync"
	"time"
)

// ErrNotSupervised is wrapped by errors about a name the Supervisor does not know.
var ErrNotSupervised = errors.New("no supervised process by that name")

// AlreadySupervisedError refuses to start a name that is already running (or
// waiting to restart). A caller that only wants it running may treat it as
// success.
type AlreadySupervisedError struct {
	Name string
	PID  int
}

func (e *AlreadySupervisedError) Error() string {
	return fmt.Sprintf("process %q is already supervised (pid %d): stop it first to start it with a new specification", e.Name, e.PID)
}

// Supervised process states.
const (
	StateRunning = "running"
	StateBackoff = "backoff" // exited, waiting to be restarted
	StateStopped = "stopped" // stopped by Stop
	StateFailed  = "failed"  // exited and used up its restarts
)

// RestartPolicy says how a supervised process is restarted when it exits.
type RestartPolicy struct {
	// MaxRestarts is how many restarts are allowed before giving up; 0 never
	// restarts, a negative value restarts without limit.
	MaxRestarts int
	// InitialBackoff is the wait before the first restart, doubled for each
	// further one up to MaxBackoff. Zero means 1 s and 1 min.
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// ResetAfter: a run that lasted this long is considered healthy and
	// forgets earlier restarts and backoff. Zero means 5 min.
	ResetAfter time.Duration
}

// DefaultRestartPolicy restarts up to 10 times with backoff from 1 s to 1 min.
func DefaultRestartPolicy() RestartPolicy {
	return RestartPolicy{MaxRestarts: 10, InitialBackoff: time.Second, MaxBackoff: time.Minute, ResetAfter: 5 * time.Minute}
}

func (p RestartPolicy) withDefaults() RestartPolicy {
	d := DefaultRestartPolicy()
	if p.InitialBackoff <= 0 {
		p.InitialBackoff = d.InitialBackoff
	}
	if p.MaxBackoff <= 0 {
		p.MaxBackoff = d.MaxBackoff
	}
	p.MaxBackoff = max(p.MaxBackoff, p.InitialBackoff)
	if p.ResetAfter <= 0 {
		p.ResetAfter = d.ResetAfter
	}
	return p
}

// SupervisedStatus is a snapshot of one supervised process.
type SupervisedStatus struct {
	Name  string   `json:"name"`
	State string   `json:"state"`
	PID   int      `json:"pid,omitempty"` // also its process group id; 0 when not running
	Argv  []string `json:"argv"`
	// Restarts counts every restart since StartSupervised.
	Restarts  int       `json:"restarts"`
	StartedAt time.Time `json:"started_at"` // of the current or last run
	// The last exit: code (-1 after a signal), signal name, and time.
	LastExitCode int       `json:"last_exit_code"`
	LastSignal   string    `json:"last_signal,omitempty"`
	LastExitAt   time.Time `json:"last_exit_at,omitzero"`
	// LastError is the last failure to start, or why supervision gave up.
	LastError string `json:"last_error,omitempty"`
}

// Supervisor keeps named processes running. Each runs in its own session and
// process group, like StartDetached. Supervision lasts as long as the
// Supervisor: the processes themselves survive the agent, so an agent that
// restarts should stop or adopt what it left behind (StopAll on shutdown).
type Supervisor struct {
	sys   *System
	mu    sync.Mutex
	procs map[string]*supervised
}

type supervised struct {
	spec   ProcessSpec
	policy RestartPolicy
	stop   chan struct{} // closed by Stop
	done   chan struct{} // closed when the monitor has finished

	// Guarded by Supervisor.mu.
	stopping bool
	status   SupervisedStatus
}

func newSupervisor(sys *System) *Supervisor {
	return &Supervisor{sys: sys, procs: map[string]*supervised{}}
}

// validName matches catalog's name schema: ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$.
func validName(name string) bool {
	if len(name) == 0 || len(name) > 128 {
		return false
	}
	for i, c := range name {
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return false
		}
	}
	return true
}

// StartSupervised starts spec under name and keeps it running according to
// policy. ctx bounds only the first start: the process runs until Stop. The
// first start's failure (program not found, say) is returned; later ones are
// retried with backoff and shown in Status.
func (sv *Supervisor) StartSupervised(ctx context.Context, name string, spec ProcessSpec, policy RestartPolicy) (SupervisedStatus, error) {
	if err := ctx.Err(); err != nil {
		return SupervisedStatus{}, err
	}
	if !validName(name) {
		return SupervisedStatus{}, fmt.Errorf("sal: %w: supervised name %q must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit", ErrInvalidSpec, name)
	}
	if err := checkArgv(spec.Argv); err != nil {
		return SupervisedStatus{}, err
	}
	p := &supervised{
		spec:   spec,
		policy: policy.withDefaults(),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
		status: SupervisedStatus{Name: name, Argv: append([]string(nil), spec.Argv...)},
	}
	sv.mu.Lock()
	if old, ok := sv.procs[name]; ok && old.status.State != StateStopped && old.status.State != StateFailed {
		pid := old.status.PID
		sv.mu.Unlock()
		return SupervisedStatus{}, &AlreadySupervisedError{Name: name, PID: pid}
	}
	// The lock is held across the first start so that two concurrent calls
	// for one name cannot both start it.
	cmd, err := sv.startLocked(p)
	if err != nil {
		sv.mu.Unlock()
		return SupervisedStatus{}, err
	}
	sv.procs[name] = p
	st := p.status
	sv.mu.Unlock()

	go sv.monitor(p, cmd)
	return st, nil
}

// startLocked starts one run of p; sv.mu must be held, which makes Stop and
// a restart mutually exclusive: Stop never misses a process started after it
// read the pid.
func (sv *Supervisor) startLocked(p *supervised) (*exec.Cmd, error) {
	if p.stopping {
		return nil, fmt.Errorf("sal: %s is being stopped", p.status.Name)
	}
	cmd, closeFiles, err := sv.sys.buildDetached(p.spec)
	if err != nil {
		return nil, err
	}
	err = cmd.Start()
	closeFiles()
	if err != nil {
		return nil, fmt.Errorf("sal: start supervised %s (%q): %w", p.status.Name, p.spec.Argv[0], err)
	}
	p.status.State = StateRunning
	p.status.PID = cmd.Process.Pid
	p.status.StartedAt = time.Now().UTC()
	p.status.LastError = ""
	return cmd, nil
}

// monitor waits for each run to end and restarts it with backoff until
// stopped or out of restarts.
func (sv *Supervisor) monitor(p *supervised, cmd *exec.Cmd) {
	defer close(p.done)
	restarts := 0 // since the last healthy run
	backoff := p.policy.InitialBackoff
	for {
		if cmd != nil {
			_ = cmd.Wait()
			// Children left in its group could hold what the next run needs
			// (a port, a lock file); they go with it, as in Run.
			stopGroup(cmd.Process.Pid, sv.sys.killGrace)
			sv.mu.Lock()
			ran := time.Since(p.status.StartedAt)
			var res ExecResult
			fillResult(&res, cmd.ProcessState)
			p.status.PID = 0
			p.status.LastExitCode = res.ExitCode
			p.status.LastSignal = res.Signal
			p.status.LastExitAt = time.Now().UTC()
			sv.mu.Unlock()
			if ran >= p.policy.ResetAfter {
				restarts = 0
				backoff = p.policy.InitialBackoff
			}
		}

		sv.mu.Lock()
		if p.stopping {
			p.status.State = StateStopped
			sv.mu.Unlock()
			return
		}
		if p.policy.MaxRestarts >= 0 && restarts >= p.policy.MaxRestarts {
			p.status.State = StateFailed
			p.status.LastError = fmt.Sprintf("gave up after %d restarts without a run of %s", restarts, p.policy.ResetAfter)
			sv.mu.Unlock()
			return
		}
		p.status.State = StateBackoff
		sv.mu.Unlock()

		t := time.NewTimer(backoff)
		select {
		case <-p.stop:
			t.Stop()
			sv.mu.Lock()
			p.status.State = StateStopped
			sv.mu.Unlock()
			return
		case <-t.C:
		}
		backoff = min(backoff*2, p.policy.MaxBackoff)
		restarts++

		sv.mu.Lock()
		p.status.Restarts++
		var err error
		cmd, err = sv.startLocked(p)
		if err != nil {
			cmd = nil
			p.status.LastError = err.Error()
		}
		sv.mu.Unlock()
	}
}

// Stop ends supervision of name: SIGTERM to its process group, SIGKILL to
// whatever is left after grace (zero means the System's KillGrace). It
// returns when the process is gone. Stopping a process that is already
// stopped or failed is not an error.
func (sv *Supervisor) Stop(name string, grace time.Duration) error {
	if grace <= 0 {
		grace = sv.sys.killGrace
	}
	sv.mu.Lock()
	p, ok := sv.procs[name]
	if !ok {
		sv.mu.Unlock()
		return fmt.Errorf("sal: stop %q: %w", name, ErrNotSupervised)
	}
	if !p.stopping {
		p.stopping = true
		close(p.stop)
	}
	pid := p.status.PID
	sv.mu.Unlock()

	if pid > 0 {
		stopGroup(pid, grace)
	}
	// After SIGKILL the process ends promptly unless stuck in the kernel
	// (uninterruptible I/O); do not hang the caller on that.
	select {
	case <-p.done:
		return nil
	case <-time.After(grace + 5*time.Second):
		return fmt.Errorf("sal: stop %q: pid %d did not exit after SIGKILL; it may be blocked in uninterruptible I/O", name, pid)
	}
}

// StopAll stops every supervised process concurrently, e.g. when the agent
// shuts down, and returns the errors joined.
func (sv *Supervisor) StopAll(grace time.Duration) error {
	sv.mu.Lock()
	names := make([]string, 0, len(sv.procs))
	for n := range sv.procs {
		names = append(names, n)
	}
	sv.mu.Unlock()
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		wg.Go(func() { errs[i] = sv.Stop(n, grace) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Status returns a snapshot of one supervised process.
func (sv *Supervisor) Status(name string) (SupervisedStatus, error) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	p, ok := sv.procs[name]
	if !ok {
		return SupervisedStatus{}, fmt.Errorf("sal: status of %q: %w", name, ErrNotSupervised)
	}
	return p.snapshot(), nil
}

// List returns a snapshot of every supervised process, sorted by name.
func (sv *Supervisor) List() []SupervisedStatus {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	out := make([]SupervisedStatus, 0, len(sv.procs))
	for _, p := range sv.procs {
		out = append(out, p.snapshot())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (p *supervised) snapshot() SupervisedStatus {
	st := p.status
	st.Argv = append([]string(nil), st.Argv...)
	return st
}
