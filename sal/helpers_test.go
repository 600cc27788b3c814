package sal

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// newTestSystem returns a System whose only file root is a fresh directory.
func newTestSystem(t *testing.T) (*System, string) {
	t.Helper()
	root := t.TempDir()
	s, err := New(Config{FileRoots: []string{root}, ScriptDir: t.TempDir(), KillGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return s, s.Roots()[0]
}

// pidAlive reports whether pid runs; a zombie counts as dead, since the
// sandbox's init may never reap orphans.
func pidAlive(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || (stat[i+2] != 'Z' && stat[i+2] != 'X')
}

// wait bounds the waits for processes to start, write, restart or die: long
// enough that only a real failure, never a loaded machine, runs it out.
const wait = 30 * time.Second

// eventually polls cond until it holds or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// recorder is a LogSink that keeps every chunk and the lines per stream.
type recorder struct {
	mu     sync.Mutex
	chunks []LogChunk
	lines  map[string][]string
	split  LogSink
}

func newRecorder() *recorder {
	r := &recorder{lines: map[string][]string{}}
	r.split = LineSink(func(stream, line string) { r.lines[stream] = append(r.lines[stream], line) })
	return r
}

func (r *recorder) Log(c LogChunk) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.chunks = append(r.chunks, c)
	r.split.Log(c)
}

func (r *recorder) Lines(stream string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lines[stream]...)
}

func (r *recorder) Chunks() []LogChunk {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]LogChunk(nil), r.chunks...)
}
