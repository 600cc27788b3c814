package sal

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestRunExitCodes(t *testing.T) {
	t.Parallel()
	s, _ := newTestSystem(t)
	tests := []struct {
		name   string
		argv   []string
		code   int
		signal string
	}{
		{"success", []string{"true"}, 0, ""},
		{"failure", []string{"false"}, 1, ""},
		{"chosen code", []string{"sh", "-c", "exit 42"}, 42, ""},
		{"killed by a signal", []string{"sh", "-c", "kill -KILL $$"}, -1, "SIGKILL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := s.Run(context.Background(), ExecSpec{Argv: tt.argv}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != tt.code || res.Signal != tt.signal || res.TimedOut || res.Cancelled {
				t.Errorf("got %+v, want exit %d signal %q", res, tt.code, tt.signal)
			}
			if res.Succeeded() != (tt.code == 0) {
				t.Errorf("Succeeded() = %v", res.Succeeded())
			}
			if res.PID <= 0 || res.Duration <= 0 || res.StartedAt.IsZero() {
				t.Errorf("missing bookkeeping: %+v", res)
			}
		})
	}
}

func TestRunStartErrors(t *testing.T) {
	t.Parallel()
	s, _ := newTestSystem(t)
	tests := []struct {
		name string
		spec ExecSpec
		want error
	}{
		{"empty argv", ExecSpec{}, ErrInvalidSpec},
		{"bad env name", ExecSpec{Argv: []string{"true"}, Env: map[string]string{"A=B": "x"}}, ErrInvalidSpec},
		{"negative timeout", ExecSpec{Argv: []string{"true"}, Timeout: -1}, ErrInvalidSpec},
		{"missing program", ExecSpec{Argv: []string{"/nonexistent/cairn-test-program"}}, os.ErrNotExist},
		{"missing directory", ExecSpec{Argv: []string{"true"}, Dir: "/nonexistent/cairn-test-dir"}, os.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := s.Run(context.Background(), tt.spec, nil)
			if !errors.Is(err, tt.want) {
				t.Fatalf("want %v, got %v", tt.want, err)
			}
		})
	}
}

func TestRunStdinEnvDir(t *testing.T) {
	t.Parallel()
	s, _ := newTestSystem(t)
	dir := t.TempDir()
	realDir, _ := filepath.EvalSymlinks(dir)
	tests := []struct {
		name string
		spec ExecSpec
		want []string
	}{
		{"stdin", ExecSpec{Argv: []string{"cat"}, Stdin: []byte("hello\nworld\n")}, []string{"hello", "world"}},
		{"no stdin reads nothing", ExecSpec{Argv: []string{"cat"}}, nil},
		{"env added", ExecSpec{Argv: []string{"sh", "-c", `echo "$CAIRN_A-$CAIRN_B"`}, Env: map[string]string{"CAIRN_A": "1", "CAIRN_B": "two words"}}, []string{"1-two words"}},
		{"env cleared", ExecSpec{Argv: []string{"/usr/bin/env"}, ClearEnv: true, Env: map[string]string{"ONLY": "me"}}, []string{"ONLY=me"}},
		{"working dir", ExecSpec{Argv: []string{"sh", "-c", "pwd -P"}, Dir: dir}, []string{realDir}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := newRecorder()
			res, err := s.Run(context.Background(), tt.spec, rec)
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != 0 {
				t.Fatalf("exit %d, stderr %q", res.ExitCode, rec.Lines(StreamStderr))
			}
			if got := rec.Lines(StreamStdout); !slices.Equal(got, tt.want) {
				t.Errorf("stdout = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRunStreamsInOrder(t *testing.T) {
	t.Parallel()
	s, _ := newTestSystem(t)
	rec := newRecorder()
	script := `i=1; while [ $i -le 2000 ]; do echo "out $i"; if [ $((i % 100)) -eq 0 ]; then echo "err $i" >&2; fi; i=$((i+1)); done`
	res, err := s.Run(context.Background(), ExecSpec{Argv: []string{"sh", "-c", script}}, rec)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%+v %v", res, err)
	}
	out := rec.Lines(StreamStdout)
	if len(out) != 2000 {
		t.Fatalf("got %d stdout lines, want 2000", len(out))
	}
	for i, l := range out {
		if l != "out "+strconv.Itoa(i+1) {
			t.Fatalf("line %d is %q", i, l)
		}
	}
	if errs := rec.Lines(StreamStderr); len(errs) != 20 || errs[19] != "err 2000" {
		t.Errorf("stderr lines: %q", errs)
	}

	var lastSeq uint64
	eofs := map[string]int{}
	var outBytes int64
	for _, c := range rec.Chunks() {
		if c.Seq != lastSeq+1 {
			t.Fatalf("sequence jumps from %d to %d", lastSeq, c.Seq)
		}
		lastSeq = c.Seq
		if len(c.Data) > MaxChunkBytes {
			t.Errorf("chunk %d has %d bytes", c.Seq, len(c.Data))
		}
		if eofs[c.Stream] > 0 {
			t.Errorf("chunk %d on %s after its EOF", c.Seq, c.Stream)
		}
		if c.EOF {
			eofs[c.Stream]++
		}
		if len(c.Data) > 0 && !c.EOF && c.Data[len(c.Data)-1] != '\n' {
			t.Errorf("chunk %d splits a line: %q", c.Seq, c.Data)
		}
		if c.Stream == StreamStdout {
			outBytes += int64(len(c.Data))
		}
	}
	if eofs[StreamStdout] != 1 || eofs[StreamStderr] != 1 {
		t.Errorf("EOF chunks: %v", eofs)
	}
	if outBytes != res.StdoutBytes {
		t.Errorf("chunks carry %d stdout bytes, result says %d", outBytes, res.StdoutBytes)
	}
}

func TestRunFlushesUnterminatedLine(t *testing.T) {
	t.Parallel()
	s, _ := newTestSystem(t)
	rec := newRecorder()
	// The command prints a partial line and holds the rest back until the
	// partial line has reached the sink (or a long minute has passed), so
	// the partial line arrives alone only if it was flushed while the command
	// still ran, however slow the machine.
	goAhead := filepath.Join(t.TempDir(), "go-ahead")
	var first []byte
	sink := LogSinkFunc(func(c LogChunk) {
		if first == nil && len(c.Data) > 0 {
			first = slices.Clone(c.Data)
			if err := os.WriteFile(goAhead, nil, 0o600); err != nil {
				t.Error(err)
			}
		}
		rec.Log(c)
	})
	script := `printf 'progress'; i=0; while [ ! -e "$GO_AHEAD" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; printf ' done'`
	if _, err := s.Run(context.Background(), ExecSpec{Argv: []string{"sh", "-c", script}, Env: map[string]string{"GO_AHEAD": goAhead}}, sink); err != nil {
		t.Fatal(err)
	}
	if string(first) != "progress" {
		t.Errorf("the first output was %q, want the partial line %q flushed on its own", first, "progress")
	}
	if got := rec.Lines(StreamStdout); !slices.Equal(got, []string{"progress done"}) {
		t.Errorf("lines = %q", got)
	}
}

func TestRunTimeoutKillsGroup(t *testing.T) {
	t.Parallel()
	s, _ := newTestSystem(t)
	tests := []struct {
		name       string
		argv       []string
		wantSignal string
		minTime    time.Duration
		childPID   bool // the command prints the pid of a child it started, once set up
	}{
		{"plain sleep", []string{"sleep", "30"}, "SIGTERM", 0, false},
		// The shell dies of SIGTERM; its background child must die with it.
		{"child of a shell", []string{"sh", "-c", `sleep 30 & echo $!; wait`}, "SIGTERM", 0, true},
		// Everything ignores SIGTERM (inherited), so SIGKILL follows the grace.
		{"ignores SIGTERM", []string{"sh", "-c", `trap '' TERM; sleep 30 & echo $!; wait; wait`}, "SIGKILL", 300 * time.Millisecond, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// A shell that has not printed its child's pid when the timeout
			// strikes was not set up yet (no child, no trap), which says
			// nothing about Run: try again with a longer timeout.
			for timeout := 300 * time.Millisecond; ; timeout *= 2 {
				rec := newRecorder()
				start := time.Now()
				res, err := s.Run(context.Background(), ExecSpec{
					Argv:      tt.argv,
					Timeout:   timeout,
					KillGrace: 300 * time.Millisecond,
				}, rec)
				if err != nil {
					t.Fatal(err)
				}
				elapsed := time.Since(start)
				lines := rec.Lines(StreamStdout)
				if tt.childPID && len(lines) == 0 && timeout < wait {
					t.Logf("the command was not set up within %s; again with a longer timeout", timeout)
					continue
				}
				if !res.TimedOut || res.Cancelled || res.Signal != tt.wantSignal {
					t.Errorf("got %+v, want timed out by %s", res, tt.wantSignal)
				}
				// The upper bound only tells a timeout from the 30 s the
				// command would run by itself.
				if elapsed > timeout+20*time.Second || elapsed < timeout+tt.minTime {
					t.Errorf("took %s with a timeout of %s", elapsed, timeout)
				}
				if groupAlive(res.PID) {
					t.Errorf("process group %d survived", res.PID)
				}
				if !tt.childPID {
					return
				}
				if len(lines) != 1 {
					t.Fatalf("want the child's pid on stdout, got %q", lines)
				}
				child, _ := strconv.Atoi(lines[0])
				if child <= 0 || pidAlive(child) {
					t.Errorf("child %d of the shell is still alive", child)
				}
				return
			}
		})
	}
}

func TestRunLeftoversAreStopped(t *testing.T) {
	t.Parallel()
	s, _ := newTestSystem(t)
	rec := newRecorder()
	start := time.Now()
	// The shell exits at once, leaving a sleep that holds stdout open.
	res, err := s.Run(context.Background(), ExecSpec{Argv: []string{"sh", "-c", "sleep 30 & echo $!"}}, rec)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%+v %v", res, err)
	}
	// Well below the 30 s the leftover would run: Run did not wait for it.
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("Run waited %s for the leftover child", d)
	}
	lines := rec.Lines(StreamStdout)
	if len(lines) != 1 {
		t.Fatalf("stdout %q", lines)
	}
	child, _ := strconv.Atoi(lines[0])
	if pidAlive(child) {
		t.Errorf("leftover child %d still alive", child)
	}
}

func TestRunCancel(t *testing.T) {
	t.Parallel()
	s, _ := newTestSystem(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	res, err := s.Run(ctx, ExecSpec{Argv: []string{"sleep", "30"}, KillGrace: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Cancelled || res.TimedOut || res.Signal != "SIGTERM" {
		t.Errorf("got %+v, want cancelled by SIGTERM", res)
	}
	// Well below the 30 s of the sleep: the cancel ended it.
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("cancel took %s", d)
	}
	if groupAlive(res.PID) {
		t.Errorf("process group %d survived", res.PID)
	}

	// A context that is already done runs nothing.
	if _, err := s.Run(ctx, ExecSpec{Argv: []string{"true"}}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("want context.Canceled, got %v", err)
	}
}

func TestRunResourceUse(t *testing.T) {
	t.Parallel()
	s, _ := newTestSystem(t)
	// Burn some CPU and touch about 50 MB.
	script := "b = bytearray(50 * 1024 * 1024)\nfor i in range(0, len(b), 4096): b[i] = 1\nn = 0\nfor i in range(2000000): n += i\n"
	res, err := s.Run(context.Background(), ExecSpec{Argv: []string{"python3", "-c", script}}, nil)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%+v %v", res, err)
	}
	if res.CPUTime <= 0 || res.CPUTime != res.UserTime+res.SystemTime {
		t.Errorf("cpu time %s (user %s, sys %s)", res.CPUTime, res.UserTime, res.SystemTime)
	}
	if res.PeakMemoryBytes < 50<<20 || res.PeakMemoryBytes > 4<<30 {
		t.Errorf("peak memory %d bytes, want about 50 MB and more", res.PeakMemoryBytes)
	}
}

func TestRunScript(t *testing.T) {
	t.Parallel()
	s, _ := newTestSystem(t)
	tests := []struct {
		name string
		spec ScriptSpec
		want []string
		code int
	}{
		{"sh with args and env", ScriptSpec{Interpreter: "sh", Body: "echo \"$1 $2 $GREETING\"\nexit 3\n", Args: []string{"a", "b"}, Env: map[string]string{"GREETING": "hi"}}, []string{"a b hi"}, 3},
		{"bash arrays", ScriptSpec{Interpreter: "bash", Body: "a=(x y z); echo ${#a[@]}"}, []string{"3"}, 0},
		{"python3 with stdin", ScriptSpec{Interpreter: "python3", Body: "import sys\nfor l in sys.stdin: print(l.strip().upper())\nprint(sys.argv[1])\n", Args: []string{"arg"}, Stdin: []byte("a\nb\n")}, []string{"A", "B", "arg"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := newRecorder()
			res, err := s.RunScript(context.Background(), tt.spec, rec)
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != tt.code {
				t.Errorf("exit %d, want %d; stderr %q", res.ExitCode, tt.code, rec.Lines(StreamStderr))
			}
			if got := rec.Lines(StreamStdout); !slices.Equal(got, tt.want) {
				t.Errorf("stdout %q, want %q", got, tt.want)
			}
		})
	}
	// Script files are removed afterwards.
	entries, err := os.ReadDir(s.scriptDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "cairn-script-") {
			t.Errorf("script left behind: %s", e.Name())
		}
	}
}

func TestRunScriptRefusals(t *testing.T) {
	t.Parallel()
	s, _ := newTestSystem(t)
	for _, spec := range []ScriptSpec{
		{Interpreter: "perl", Body: "print 1"},
		{Interpreter: "sh"},
	} {
		if _, err := s.RunScript(context.Background(), spec, nil); !errors.Is(err, ErrInvalidSpec) {
			t.Errorf("%+v: want ErrInvalidSpec, got %v", spec, err)
		}
	}
}

func TestLineSinkJoinsPartialLines(t *testing.T) {
	t.Parallel()
	var got []string
	sink := LineSink(func(stream, line string) { got = append(got, stream+":"+line) })
	for _, c := range []LogChunk{
		{Stream: "stdout", Data: []byte("ab")},
		{Stream: "stderr", Data: []byte("e1\n")},
		{Stream: "stdout", Data: []byte("c\nd")},
		{Stream: "stdout", Data: []byte("e"), EOF: true},
	} {
		sink.Log(c)
	}
	want := []string{"stderr:e1", "stdout:abc", "stdout:de"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
