package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"cairn/graph/client"
	"cairn/internal/ptr"
	"cairn/sal/catalog"
)

// localJob is a job attempt this agent drives.
type localJob struct {
	dir     jobDir
	name    string
	jobID   string
	attempt int
	// stop is closed when the job is to stop (a cancel).
	stop     chan struct{}
	stopOnce sync.Once
}

func (j *localJob) requestStop() { j.stopOnce.Do(func() { close(j.stop) }) }

func (j *localJob) stopping() bool {
	select {
	case <-j.stop:
		return true
	default:
		return false
	}
}

// shipPoll is how often a running job's log is looked at for new output:
// the runner is another process, so the agent reads the file it appends to.
const shipPoll = 50 * time.Millisecond

// receive journals a lease before anything else happens to it, then drives
// it. A lease already journaled (a redelivery after a reconnect) is not run
// again; a stop item stops the job.
func (a *Agent) receive(ctx context.Context, wg *sync.WaitGroup, l Lease) error {
	if l.Job.ID == "" || l.Attempt < 1 {
		return fmt.Errorf("the control plane sent a lease without a job id or attempt: %+v", l)
	}
	if l.CancelRequested {
		a.cancel(l.Job.ID)
		return a.saveCursor(l.Cursor)
	}
	name := jobDirName(l.Job.ID, l.Attempt)
	dir := jobDir(filepath.Join(a.jobs, name))
	if _, err := os.Stat(string(dir)); err == nil {
		return a.saveCursor(l.Cursor) // known: delivered again after a reconnect
	}
	tmp, err := os.MkdirTemp(a.jobs, ".new-")
	if err != nil {
		return fmt.Errorf("journal job %s: %w", l.Job.ID, err)
	}
	rec := record{Lease: l, State: stateReceived, Sal: SalConfig{FileRoots: a.sys.Roots(), WorkDir: a.cfg.WorkDir, ScriptDir: a.cfg.ScriptDir}}
	// The directory appears under its name only once job.json is in it.
	if err := jobDir(tmp).write(rec); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("journal job %s: %w", l.Job.ID, err)
	}
	if err := os.Rename(tmp, string(dir)); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("journal job %s: %w", l.Job.ID, err)
	}
	if err := syncDir(a.jobs); err != nil {
		return err
	}
	a.log.Info().Str("job", l.Job.ID).Int("attempt", l.Attempt).Msg("job received")
	a.launch(ctx, wg, dir, name, l.Job.ID, l.Attempt)
	return a.saveCursor(l.Cursor)
}

// recover drives again every job the journal holds that is not done.
func (a *Agent) recover(ctx context.Context, wg *sync.WaitGroup) error {
	entries, err := os.ReadDir(a.jobs)
	if err != nil {
		return fmt.Errorf("agent: read the job journal: %w", err)
	}
	for _, e := range entries {
		id, attempt, ok := parseJobDirName(e.Name())
		if !e.IsDir() || !ok {
			if len(e.Name()) > 4 && e.Name()[:5] == ".new-" {
				os.RemoveAll(filepath.Join(a.jobs, e.Name())) // never named: never acknowledged
			}
			continue
		}
		dir := jobDir(filepath.Join(a.jobs, e.Name()))
		rec, err := dir.read()
		if err != nil {
			a.log.Error().Err(err).Str("dir", string(dir)).Msg("unreadable job journal entry; leaving it alone")
			continue
		}
		if rec.State == stateDone {
			continue
		}
		a.log.Info().Str("job", id).Int("attempt", attempt).Str("state", rec.State).Msg("resuming a job from the journal")
		a.launch(ctx, wg, dir, e.Name(), id, attempt)
	}
	return nil
}

func (a *Agent) launch(ctx context.Context, wg *sync.WaitGroup, dir jobDir, name, id string, attempt int) {
	j := &localJob{dir: dir, name: name, jobID: id, attempt: attempt, stop: make(chan struct{})}
	a.mu.Lock()
	a.active[name] = j
	a.mu.Unlock()
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := a.drive(ctx, j)
		a.mu.Lock()
		delete(a.active, name)
		a.mu.Unlock()
		if err != nil && ctx.Err() == nil {
			a.log.Error().Err(err).Str("job", id).Msg("job handling failed; it resumes when the agent restarts")
		}
	}()
}

// cancel stops the local attempts of a job.
func (a *Agent) cancel(jobID string) {
	a.mu.Lock()
	var hit []*localJob
	for _, j := range a.active {
		if j.jobID == jobID {
			hit = append(hit, j)
		}
	}
	a.mu.Unlock()
	for _, j := range hit {
		a.log.Info().Str("job", jobID).Msg("job asked to stop")
		j.requestStop()
		if rec, err := j.dir.read(); err == nil && runsInAgent(rec) {
			continue // it runs here: the stop ended its context
		}
		if err := j.dir.signal(syscall.SIGTERM); err != nil {
			a.log.Warn().Err(err).Str("job", jobID).Msg("could not signal the job's runner")
		}
	}
}

// running lists the jobs this agent runs (started, not reported yet).
func (a *Agent) running() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	ids := []string{}
	for _, j := range a.active {
		if j.dir.exists(fileStarted) || j.dir.runnerAlive() {
			ids = append(ids, j.jobID)
		}
	}
	return ids
}

// otherAttemptActive reports whether another attempt of the same job is
// still being driven: a job never runs twice at once on a node.
func (a *Agent) otherAttemptActive(j *localJob) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, o := range a.active {
		if o != j && o.jobID == j.jobID && o.attempt < j.attempt {
			return true
		}
	}
	return false
}

// drive takes a job attempt from wherever the journal says it is to done.
func (a *Agent) drive(ctx context.Context, j *localJob) error {
	rec, err := j.dir.read()
	if err != nil {
		return err
	}
	if rec.State == stateReceived {
		if rec, err = a.start(ctx, j, rec); err != nil || rec.State == stateDone {
			return err
		}
	}
	return a.supervise(ctx, j, rec)
}

// start asks to start the job (acknowledging the lease first only when an
// earlier attempt must end before it); the job runs only once the control
// plane accepted, so a cancelled or re-leased job never runs.
func (a *Agent) start(ctx context.Context, j *localJob, rec record) (record, error) {
	in := map[string]any{"nodeId": a.nodeID, "jobId": j.jobID}
	acked := false
	for a.otherAttemptActive(j) {
		if !acked {
			// Keep the lease while the earlier attempt ends.
			if err := a.call(ctx, j, "Acknowledge", withCommand(in, a.commandID(j, "ack"))); err != nil {
				return a.refuse(j, rec, err)
			}
			acked = true
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return rec, err
		}
	}
	if rec.Stop || j.stopping() {
		return a.refuse(j, rec, errStopBeforeStart)
	}
	// Start implies the acknowledgement: a job that can start at once is
	// not acknowledged first, which would cost a command of its own.
	if err := a.call(ctx, j, "Start", withCommand(in, a.commandID(j, "start"))); err != nil {
		return a.refuse(j, rec, err)
	}
	rec.State = stateStarted
	if err := j.dir.write(rec); err != nil {
		return rec, err
	}
	a.log.Info().Str("job", j.jobID).Int("attempt", j.attempt).Msg("job started")
	return rec, nil
}

// refuse ends a job the control plane refused (or that is to stop); a
// passing trouble is returned instead, to be retried by the caller's loop.
func (a *Agent) refuse(j *localJob, rec record, err error) (record, error) {
	if !client.Permanent(err) && !errors.Is(err, errStopBeforeStart) {
		return rec, err
	}
	a.log.Info().Str("job", j.jobID).Int("attempt", j.attempt).Str("reason", err.Error()).Msg("job not run")
	rec.State, rec.Refused = stateDone, err.Error()
	return rec, j.dir.write(rec)
}

var errStopBeforeStart = errors.New("asked to stop before it started")

// call sends an operation for a job, retrying passing troubles with backoff
// until it succeeds or is refused for good.
func (a *Agent) call(ctx context.Context, j *localJob, op string, input map[string]any) error {
	return a.sess.Report(ctx, op, input)
}

func withCommand(in map[string]any, commandID string) map[string]any {
	out := make(map[string]any, len(in)+1)
	for k, v := range in {
		out[k] = v
	}
	out["commandId"] = commandID
	return out
}

// commandID names a report of this attempt, so a report sent again after a
// lost reply (or by the agent after a restart) is recognised, not doubled.
func (a *Agent) commandID(j *localJob, what string) string {
	return a.sess.CommandID(j.jobID, j.attempt, what)
}

// supervise makes sure the job's runner runs (once), ships its output as it
// appears and reports the result once all output was stored.
func (a *Agent) supervise(ctx context.Context, j *localJob, rec record) error {
	var exited chan struct{}
	if !j.dir.exists(fileResult) && !j.dir.runnerAlive() {
		if j.dir.exists(fileStarted) {
			if err := a.runnerDied(j, ""); err != nil {
				return err
			}
		} else if j.stopping() || rec.Stop {
			if err := a.runnerDied(j, "asked to stop before it ran"); err != nil {
				return err
			}
		} else {
			start := a.spawn
			if runsInAgent(rec) {
				start = a.runHere
			}
			ch, err := start(j)
			if err != nil {
				return err
			}
			exited = ch
		}
	}
	sent := j.dir.sent()
	var offset int64
	for {
		// Whether the runner is finished is decided before reading, so the
		// last read sees everything it wrote.
		finished := j.dir.exists(fileResult) && !j.dir.runnerAlive()
		next, last, err := a.ship(ctx, j, offset, sent)
		if err != nil {
			return err
		}
		if last < 0 {
			return nil // refused: done
		}
		progressed := next != offset
		offset, sent = next, last
		if progressed {
			continue
		}
		if finished {
			return a.finish(ctx, j, rec)
		}
		if exited != nil {
			select {
			case <-exited:
				exited = nil
				if !j.dir.exists(fileResult) && !j.dir.runnerAlive() {
					if err := a.runnerDied(j, ""); err != nil {
						return err
					}
				}
				continue
			default:
			}
		} else if !j.dir.exists(fileResult) && !j.dir.runnerAlive() && j.dir.exists(fileStarted) {
			if err := a.runnerDied(j, ""); err != nil {
				return err
			}
			continue
		}
		if err := sleep(ctx, shipPoll); err != nil {
			return err
		}
	}
}

// spawn starts the job's runner in its own session, so it survives the
// agent, and returns a channel closed when it exits.
func (a *Agent) spawn(j *localJob) (chan struct{}, error) {
	errFile, err := os.OpenFile(j.dir.path(fileRunErr), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer errFile.Close()
	args := append(append([]string{}, a.cfg.RunnerCommand[1:]...), string(j.dir))
	cmd := exec.Command(a.cfg.RunnerCommand[0], args...)
	cmd.Stdout, cmd.Stderr = errFile, errFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the runner of job %s: %w", j.jobID, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	return exited, nil
}

// inAgentActions are the actions the agent runs in its own process rather
// than in a runner: supervised processes belong to the agent's supervisor,
// which must outlive each job so that a later job (status, stop) finds what
// an earlier one started. They return quickly.
var inAgentActions = []string{catalog.ActionSupervisorStart, catalog.ActionSupervisorStop, catalog.ActionSupervisorStatus}

func runsInAgent(rec record) bool {
	spec := rec.Lease.Job.Spec
	return spec.Kind == "ACTION" && slices.Contains(inAgentActions, ptr.Value(spec.Action))
}

// runHere runs the job in the agent's process on the agent's System, with
// the journal kept as a runner keeps it (the lock held meanwhile, started,
// log, result), and returns a channel closed when it is done. A cancel
// ends its context.
func (a *Agent) runHere(j *localJob) (chan struct{}, error) {
	lock, ok, err := j.dir.claim()
	if err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	if !ok {
		close(exited)
		return exited, nil
	}
	a.here.Add(1)
	go func() {
		defer a.here.Done()
		defer close(exited)
		defer lock.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			select {
			case <-j.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		if err := j.dir.runAndRecord(ctx, a.sys, j.stopping); err != nil {
			a.log.Error().Err(err).Str("job", j.jobID).Msg("could not record the job's result")
			_ = os.WriteFile(j.dir.path(fileRunErr), []byte(err.Error()+"\n"), 0o600)
		}
	}()
	return exited, nil
}

// stopSupervised stops every process the agent supervises, once the jobs it
// runs itself have ended: supervision ends with the agent, and a process
// left running unsupervised could be neither seen nor stopped by the next
// agent.
func (a *Agent) stopSupervised() {
	a.here.Wait()
	if err := a.sys.Supervisor().StopAll(0); err != nil {
		a.log.Error().Err(err).Msg("stopping the supervised processes")
	}
}

// runnerDied records the result of a job whose runner ended without one:
// the machine rebooted, the runner was killed, or it never ran the job.
func (a *Agent) runnerDied(j *localJob, why string) error {
	outcome := OutcomeFailed
	if j.stopping() {
		outcome = OutcomeCancelled
	}
	if why == "" {
		why = "the job's runner stopped without recording a result"
		if b, err := os.ReadFile(j.dir.path(fileRunErr)); err == nil && len(b) > 0 {
			why += ": " + firstLine(b)
		}
		if !j.dir.exists(fileStarted) {
			why = "the job's runner did not start it"
		}
	}
	spool, err := openSpool(j.dir.path(fileLog))
	if err != nil {
		return err
	}
	spool.write("system", []byte(why+"\n"), time.Now())
	if err := spool.close(); err != nil {
		return err
	}
	res := Result{Outcome: outcome, ExitCode: -1, Error: &why}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	a.log.Warn().Str("job", j.jobID).Str("reason", why).Msg("job ended without its runner's result")
	return writeAtomic(j.dir.path(fileResult), b, 0o600)
}

// ship sends the output after byte offset whose seq is above sent, in
// batches, and returns the new offset and highest seq stored. A last seq of
// -1 means the control plane refused the job's output for good.
func (a *Agent) ship(ctx context.Context, j *localJob, offset, sent int64) (int64, int64, error) {
	chunks, next, err := readSpoolAt(j.dir.path(fileLog), offset, sent, 256<<10)
	if err != nil {
		return offset, sent, err
	}
	for len(chunks) > 0 {
		n := min(len(chunks), 500)
		batch := chunks[:n]
		in := map[string]any{"nodeId": a.nodeID, "jobId": j.jobID, "chunks": batchInput(batch)}
		if err := a.call(ctx, j, "AppendLog", in); err != nil {
			if client.Permanent(err) {
				rec, rerr := j.dir.read()
				if rerr == nil {
					_, rerr = a.refuse(j, rec, err)
				}
				return offset, -1, rerr
			}
			return offset, sent, err
		}
		sent = batch[n-1].Seq
		if err := j.dir.setSent(sent); err != nil {
			return offset, sent, err
		}
		chunks = chunks[n:]
	}
	return next, sent, nil
}

func batchInput(chunks []Chunk) []map[string]any {
	out := make([]map[string]any, len(chunks))
	for i, c := range chunks {
		stream := "STDOUT"
		switch c.Stream {
		case "stderr":
			stream = "STDERR"
		case "system":
			stream = "SYSTEM"
		}
		out[i] = map[string]any{"seq": c.Seq, "stream": stream, "data": c.Data, "time": c.Time.Format(time.RFC3339Nano)}
	}
	return out
}

// finish reports the result, once: its command id makes a resend after a
// lost reply harmless.
func (a *Agent) finish(ctx context.Context, j *localJob, rec record) error {
	b, err := os.ReadFile(j.dir.path(fileResult))
	if err != nil {
		return err
	}
	var res Result
	if err := json.Unmarshal(b, &res); err != nil {
		return fmt.Errorf("%s: %w", j.dir.path(fileResult), err)
	}
	in := map[string]any{"nodeId": a.nodeID, "jobId": j.jobID, "result": res}
	err = a.call(ctx, j, "Finish", withCommand(in, a.commandID(j, "finish")))
	if client.CodeOf(err) == "CONFLICT" && res.Outcome == OutcomeCancelled {
		// Stopped by a signal nobody on the control plane asked for (the
		// machine shutting down, say): that is a failure.
		res.Outcome = OutcomeFailed
		in["result"] = res
		err = a.call(ctx, j, "Finish", withCommand(in, a.commandID(j, "finish-failed")))
	}
	if err != nil && !client.Permanent(err) {
		return err
	}
	rec.State = stateDone
	if err != nil {
		rec.Refused = err.Error()
		a.log.Warn().Err(err).Str("job", j.jobID).Msg("the control plane refused the job's result")
	} else {
		a.log.Info().Str("job", j.jobID).Int("attempt", j.attempt).Str("outcome", res.Outcome).Msg("job finished")
	}
	return j.dir.write(rec)
}

// collect deletes the journal of jobs finished longer ago than the
// retention, every hour.
func (a *Agent) collect(ctx context.Context) error {
	for {
		entries, err := os.ReadDir(a.jobs)
		if err == nil {
			for _, e := range entries {
				if _, _, ok := parseJobDirName(e.Name()); !ok || !e.IsDir() {
					continue
				}
				dir := jobDir(filepath.Join(a.jobs, e.Name()))
				rec, err := dir.read()
				if err == nil && rec.State == stateDone && time.Since(rec.Updated) > a.cfg.JobRetention {
					os.RemoveAll(string(dir))
				}
			}
		}
		if err := sleep(ctx, time.Hour); err != nil {
			return nil
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
