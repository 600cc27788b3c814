package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Each job attempt the agent receives gets a directory under jobs/ in the
// data directory, named <job id>@<attempt>. It is the agent's memory of the
// job: what it was asked to run, how far it got, its output and its result,
// so that nothing is lost or run twice across restarts of the agent or the
// control plane.
//
//	job.json     the lease as received and the agent's progress (state)
//	lock         held (flock) by the runner while it runs the job
//	started      created once by the runner before it runs anything
//	pid          the runner's process id, to signal a cancel
//	log          the output, one JSON chunk per line, append-only
//	result.json  how the job ended, written once by the runner
//	sent         the highest seq the control plane stored
//
// The runner is a separate process (see runner.go) that outlives the agent,
// so a job keeps running, and its output keeps landing in the log, while the
// agent restarts. The supervisor actions are the exception: the agent runs
// them itself (runHere), keeping the same files but no pid.
const (
	fileJob     = "job.json"
	fileLock    = "lock"
	fileStarted = "started"
	filePID     = "pid"
	fileLog     = "log"
	fileResult  = "result.json"
	fileSent    = "sent"
	fileRunErr  = "runner.err"
)

// Local states of a job attempt.
const (
	stateReceived = "received" // journaled; the control plane has not accepted its start yet
	stateStarted  = "started"  // the start was accepted: the runner runs it (or ran it)
	stateDone     = "done"     // its result is recorded, or the control plane refused it
)

// record is job.json.
type record struct {
	Lease Lease  `json:"lease"`
	State string `json:"state"`
	// Stop is set when the job was asked to stop before it started.
	Stop bool `json:"stop,omitempty"`
	// Refused says why the control plane refused the job, if it did.
	Refused string    `json:"refused,omitempty"`
	Updated time.Time `json:"updated"`
	// Sal is how the runner must build its System.
	Sal SalConfig `json:"sal"`
}

// SalConfig is the part of the agent's configuration a runner needs.
type SalConfig struct {
	FileRoots []string `json:"fileRoots"`
	WorkDir   string   `json:"workDir,omitempty"`
	ScriptDir string   `json:"scriptDir,omitempty"`
}

type jobDir string

func jobDirName(jobID string, attempt int) string {
	return jobID + "@" + strconv.Itoa(attempt)
}

// parseJobDirName splits a job directory's name.
func parseJobDirName(name string) (string, int, bool) {
	i := strings.LastIndexByte(name, '@')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(name[i+1:])
	if err != nil || n < 1 {
		return "", 0, false
	}
	return name[:i], n, true
}

func (d jobDir) path(name string) string { return filepath.Join(string(d), name) }

func (d jobDir) exists(name string) bool {
	_, err := os.Stat(d.path(name))
	return err == nil
}

func (d jobDir) read() (record, error) {
	var r record
	b, err := os.ReadFile(d.path(fileJob))
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%s: %w", d.path(fileJob), err)
	}
	return r, nil
}

func (d jobDir) write(r record) error {
	r.Updated = time.Now().UTC()
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return writeAtomic(d.path(fileJob), b, 0o600)
}

// sent returns the highest seq the control plane stored.
func (d jobDir) sent() int64 {
	b, err := os.ReadFile(d.path(fileSent))
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

func (d jobDir) setSent(seq int64) error {
	return writeAtomic(d.path(fileSent), []byte(strconv.FormatInt(seq, 10)), 0o600)
}

// runnerAlive reports whether a runner holds the job's lock.
func (d jobDir) runnerAlive() bool {
	f, err := os.OpenFile(d.path(fileLock), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

// signal sends sig to the runner if it still runs.
func (d jobDir) signal(sig syscall.Signal) error {
	if !d.runnerAlive() {
		return nil
	}
	b, err := os.ReadFile(d.path(filePID))
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return fmt.Errorf("runner pid file of %s holds %q", d, b)
	}
	return syscall.Kill(pid, sig)
}

// writeAtomic replaces a file so that a reader sees the old or the new
// content, never a part, even across a crash.
func writeAtomic(path string, data []byte, mode fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	if werr == nil {
		werr = tmp.Chmod(mode)
	}
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, werr)
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
