package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"cairn/internal/ptr"
	"cairn/sal"
)

// The runner is the process that runs one job. The agent starts it detached
// (its own session), so it outlives an agent that is killed or restarted:
// the job runs to its end, its output lands in the job's log file and its
// result in result.json, and the agent — this one or the next — delivers
// them. It holds the job directory's lock while it runs and marks the job
// started before it runs anything, so a job never runs twice even if two
// runners are started for it.

// RunJob is the runner's main: it runs the job recorded in dir once and
// records its output and result there. SIGTERM stops the job (the process
// group gets SIGTERM, then SIGKILL after the job's grace period) and records
// it as cancelled. A runner started for a job that another runner runs, or
// ran, returns at once without doing anything.
func RunJob(dir string) error {
	d := jobDir(dir)
	lock, ok, err := d.claim()
	if err != nil || !ok {
		return err
	}
	defer lock.Close()
	if err := writeAtomic(d.path(filePID), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	var cancelled atomic.Bool
	go func() {
		if _, ok := <-sigs; ok {
			cancelled.Store(true)
			cancel()
		}
	}()
	return d.runAndRecord(ctx, nil, cancelled.Load)
}

// claim takes the job's lock and marks the job started. ok is false when
// another runner has the job or it ran before; otherwise the returned file
// holds the lock until it is closed.
func (d jobDir) claim() (lock *os.File, ok bool, err error) {
	lock, err = os.OpenFile(d.path(fileLock), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false, err
	}
	if err := takeLock(lock); err != nil {
		lock.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, false, nil // another runner has the job
		}
		return nil, false, fmt.Errorf("lock %s: %w", d.path(fileLock), err)
	}
	// O_EXCL: exactly one runner ever gets past this point.
	mark, err := os.OpenFile(d.path(fileStarted), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		lock.Close()
		return nil, false, nil // it ran before; the agent deals with how that ended
	}
	if err == nil {
		err = errors.Join(mark.Sync(), mark.Close(), syncDir(string(d)))
	}
	if err != nil {
		lock.Close()
		return nil, false, err
	}
	return lock, true, nil
}

// runAndRecord runs the job journaled in d, claimed by the caller, on sys
// (nil: a System built from the journal's configuration), and writes its
// result. cancelled says whether a stop was asked for, which makes a job
// that did not succeed cancelled.
func (d jobDir) runAndRecord(ctx context.Context, sys *sal.System, cancelled func() bool) error {
	rec, err := d.read()
	if err != nil {
		return err
	}
	spool, err := openSpool(d.path(fileLog))
	if err != nil {
		return err
	}
	res := run(ctx, rec, sys, spool)
	if cancelled() && res.Outcome != OutcomeSucceeded {
		res.Outcome = OutcomeCancelled
	}
	if err := spool.close(); err != nil && res.Error == nil {
		msg := err.Error()
		res.Error = &msg
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	return writeAtomic(d.path(fileResult), b, 0o600)
}

// takeLock takes the job's lock. The agent probes the lock now and then (to
// see whether a runner is alive), holding it for an instant, so a busy lock
// is tried again for a while before it is taken to mean another runner.
func takeLock(f *os.File) error {
	deadline := time.Now().Add(2 * time.Second)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// run runs the job on sys (nil: a System built from the journal's
// configuration) and returns its result; failures to run at all (an
// unknown interpreter, a path outside the file roots) are results too.
func run(ctx context.Context, rec record, sys *sal.System, spool *spoolWriter) Result {
	fail := func(format string, args ...any) Result {
		msg := fmt.Sprintf(format, args...)
		spool.write("system", []byte(msg+"\n"), time.Now())
		return Result{Outcome: OutcomeFailed, ExitCode: -1, Error: &msg}
	}
	var err error
	if sys == nil {
		sys, err = sal.New(sal.Config{FileRoots: rec.Sal.FileRoots, WorkDir: rec.Sal.WorkDir, ScriptDir: rec.Sal.ScriptDir})
		if err != nil {
			return fail("the node cannot run jobs: %v", err)
		}
	}
	j := rec.Lease.Job
	timeout := time.Duration(j.TimeoutSeconds) * time.Second
	grace := time.Duration(j.GraceSeconds) * time.Second
	if grace <= 0 {
		// The smallest grace sal tells apart from its default.
		grace = time.Millisecond
	}
	sink := sal.LogSinkFunc(func(c sal.LogChunk) { spool.write(c.Stream, c.Data, c.Time) })

	var res sal.ExecResult
	switch j.Spec.Kind {
	case "ACTION":
		return runAction(ctx, sys, j, timeout, spool)
	case "EXEC":
		x := j.Spec.Exec
		if x == nil {
			return fail("the job has kind EXEC but no exec part")
		}
		spec := sal.ExecSpec{Argv: x.Argv, Timeout: timeout, KillGrace: grace, Dir: ptr.Value(x.Workdir)}
		if len(x.Env) > 0 {
			spec.Env = map[string]string{}
			for _, e := range x.Env {
				spec.Env[e.Name] = e.Value
			}
		}
		if x.Stdin != nil {
			spec.Stdin = []byte(*x.Stdin)
		}
		res, err = sys.Run(ctx, spec, sink)
	case "SCRIPT":
		x := j.Spec.Script
		if x == nil {
			return fail("the job has kind SCRIPT but no script part")
		}
		res, err = sys.RunScript(ctx, sal.ScriptSpec{Interpreter: x.Interpreter, Body: x.Body, Timeout: timeout, KillGrace: grace}, sink)
	default:
		return fail("job kind %q is not one this agent runs (ACTION, EXEC, SCRIPT)", j.Spec.Kind)
	}
	if err != nil {
		return fail("could not run the job: %v", err)
	}
	out := Result{ExitCode: res.ExitCode, CPUTimeMs: res.CPUTime.Milliseconds(), PeakMemoryBytes: int64(res.PeakMemoryBytes)}
	switch {
	case res.TimedOut:
		out.Outcome = OutcomeTimedOut
		msg := fmt.Sprintf("timed out after %s: stopped with SIGTERM, killed after %s if still running", timeout, grace)
		out.Error = &msg
		spool.write("system", []byte(msg+"\n"), time.Now())
	case res.Cancelled:
		out.Outcome = OutcomeCancelled
		msg := fmt.Sprintf("cancelled: stopped with SIGTERM, killed after %s if still running", grace)
		out.Error = &msg
		spool.write("system", []byte(msg+"\n"), time.Now())
	case res.Succeeded():
		out.Outcome = OutcomeSucceeded
	default:
		out.Outcome = OutcomeFailed
		msg := fmt.Sprintf("exited with status %d", res.ExitCode)
		if res.Signal != "" {
			msg = "killed by " + res.Signal
		}
		out.Error = &msg
	}
	return out
}

func runAction(ctx context.Context, sys *sal.System, j Job, timeout time.Duration, spool *spoolWriter) Result {
	name := ptr.Value(j.Spec.Action)
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	args := j.Spec.Args
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	started := time.Now()
	out, err := sys.Invoke(ctx, name, args)
	if err != nil {
		msg := fmt.Sprintf("%s: %v", name, err)
		outcome := OutcomeFailed
		if errors.Is(err, context.DeadlineExceeded) && time.Since(started) >= timeout {
			outcome = OutcomeTimedOut
		}
		if errors.Is(err, context.Canceled) {
			outcome = OutcomeCancelled
		}
		spool.write("system", []byte(msg+"\n"), time.Now())
		return Result{Outcome: outcome, ExitCode: 1, Error: &msg}
	}
	return Result{Outcome: OutcomeSucceeded, Output: out}
}
