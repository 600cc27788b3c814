package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// Some benchmarks run their clients in a child process of the bench, so
// that what the clients cost is not the measured process's: the bench's
// own executable, started with an environment variable naming a plan (a
// JSON file). The child sets up, prints "ready", works until its stdin
// closes, and may print one line (its report) before it exits. Which
// child runs is chosen before main parses flags, so the benchmark list
// need not know about them.
var children = map[string]func(plan string) error{
	swarmEnv:           runSwarm,
	soakSubscribersEnv: runSoakSubscribers,
	referenceWorkEnv:   runReferenceWork,
}

func init() {
	for env, run := range children {
		if plan := os.Getenv(env); plan != "" {
			if err := run(plan); err != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n", env, err)
				os.Exit(1)
			}
			os.Exit(0)
		}
	}
}

// readPlan reads a child's plan into v.
func readPlan(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// readyUntilEnd tells the bench the child is ready and waits until it
// closes the child's stdin.
func readyUntilEnd() {
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// child is a running child process, seen from the bench.
type child struct {
	cmd   *exec.Cmd
	stdin io.Closer
	out   *bufio.Reader
	plan  string
	// stopped is set by stop, with what it returned.
	stopped bool
	report  string
	err     error
}

// startChild starts the child that env names with plan, and waits until
// it is ready.
func startChild(ctx context.Context, env string, plan any) (*child, error) {
	f, err := os.CreateTemp("", "cairn-bench-plan-*.json")
	if err != nil {
		return nil, err
	}
	c := &child{plan: f.Name()}
	err = json.NewEncoder(f).Encode(plan)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	exe, eerr := os.Executable()
	if err == nil {
		err = eerr
	}
	if err != nil {
		os.Remove(c.plan)
		return nil, err
	}
	c.cmd = exec.CommandContext(ctx, exe)
	c.cmd.Env = append(os.Environ(), env+"="+c.plan)
	c.cmd.Stderr = os.Stderr
	stdout, err := c.cmd.StdoutPipe()
	if err == nil {
		c.stdin, err = c.cmd.StdinPipe()
	}
	if err == nil {
		err = c.cmd.Start()
	}
	if err != nil {
		os.Remove(c.plan)
		return nil, err
	}
	c.out = bufio.NewReader(stdout)
	line, err := c.out.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		_, _ = c.stop()
		return nil, fmt.Errorf("%s: the child process said %q instead of ready (%v)", env, line, err)
	}
	return c, nil
}

// stop closes the child's stdin and returns the line it printed last, if
// any, once it exited; later calls return the same.
func (c *child) stop() (string, error) {
	if c.stopped {
		return c.report, c.err
	}
	c.stopped = true
	defer os.Remove(c.plan)
	c.stdin.Close()
	line, _ := c.out.ReadString('\n')
	c.report = strings.TrimSpace(line)
	if err := c.cmd.Wait(); err != nil {
		c.err = fmt.Errorf("the child process: %w", err)
	}
	return c.report, c.err
}
