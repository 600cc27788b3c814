// Package exec runs a plugin as a separate executable, in any language, that
// speaks JSON-RPC 2.0 over its standard input and output, one JSON object per
// line. Cairn starts the executable, asks it to "describe" its resource
// types, then sends it "create", "start", "stop", "destroy" and "observe"
// requests, several at a time when the orchestrator works in parallel
// (answers may come in any order: they are matched by id). What the
// executable writes to standard error is logged. docs/plugins.md is the
// protocol's reference for plugin authors; examples/plugins/filestore is a
// complete plugin in Python.
//
// When the executable exits, or breaks the protocol, the calls waiting on it
// fail with the reason and the next call starts it again; lifecycle calls are
// idempotent by resource id, so the orchestrator's retry is safe.
package exec

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"cairn/plugins"
)

// ProtocolVersion is sent with describe and in CAIRN_PLUGIN_PROTOCOL.
const ProtocolVersion = 1

// Error codes a plugin may answer with beyond JSON-RPC's own.
const (
	// CodeNotFound answers observe for a resource that does not exist.
	CodeNotFound = -32004
)

// MaxLine bounds one line of the plugin's output.
const MaxLine = plugins.MaxOutputBytes + 64<<10

// Config says how to run the executable.
type Config struct {
	// Command is the program and its arguments; the program is looked up in
	// PATH when it has no slash.
	Command []string
	// Env is added to Cairn's environment, as "NAME=value".
	Env []string
	// Dir is the working directory; empty means Cairn's.
	Dir string
	// StartTimeout bounds starting the program and its describe answer;
	// default 10 s.
	StartTimeout time.Duration
	// Restart is the least time between two starts, so a plugin that keeps
	// crashing is not restarted in a busy loop; default 1 s.
	Restart time.Duration
	// StopGrace is how long Close waits for the program to exit after its
	// input is closed before killing it; default 5 s.
	StopGrace time.Duration
	Log       zerolog.Logger
}

// Plugin is a running (or restartable) plugin process. It is safe for
// concurrent use; Close stops the process.
type Plugin struct {
	plugins.ByOp // each lifecycle call is one request to the process
	cfg          Config

	mu        sync.Mutex
	conn      *conn
	lastStart time.Time
	closed    bool
}

// New starts the program and asks for its resource types.
func New(ctx context.Context, cfg Config) (*Plugin, error) {
	if len(cfg.Command) == 0 || cfg.Command[0] == "" {
		return nil, errors.New("exec plugin: no command")
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 10 * time.Second
	}
	if cfg.Restart <= 0 {
		cfg.Restart = time.Second
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = 5 * time.Second
	}
	p := &Plugin{cfg: cfg}
	sctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	raw, err := p.call(sctx, "describe", map[string]int{"protocolVersion": ProtocolVersion})
	if err != nil {
		p.Close()
		return nil, fmt.Errorf("exec plugin %s: describe: %w", cfg.Command[0], err)
	}
	var d struct {
		Types []plugins.ResourceType `json:"types"`
	}
	if err := json.Unmarshal(raw, &d); err != nil || len(d.Types) == 0 {
		p.Close()
		return nil, fmt.Errorf("exec plugin %s: describe must answer {\"types\": [{\"name\": …, \"schema\": …}, …]}, got %s", cfg.Command[0], snippet(raw))
	}
	p.ByOp = plugins.ByOp{Types: d.Types, Call: p.lifecycle}
	return p, nil
}

// lifecycle makes one lifecycle call through the process.
func (p *Plugin) lifecycle(ctx context.Context, op plugins.Op, r plugins.Request) (json.RawMessage, error) {
	raw, err := p.call(ctx, string(op), r)
	if err != nil {
		var re *RemoteError
		if op == plugins.OpObserve && errors.As(err, &re) && re.Code == CodeNotFound {
			return nil, fmt.Errorf("%w: %w", plugins.ErrNotFound, err)
		}
		return nil, err
	}
	var res struct {
		Outputs json.RawMessage `json:"outputs"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, &ProtocolError{Reason: fmt.Sprintf("the result of %s must be an object {\"outputs\": {…}}, got %s", op, snippet(raw))}
	}
	return res.Outputs, nil
}

// Close stops the program: its standard input is closed, which asks it to
// exit, and it is killed if it has not after a few seconds.
func (p *Plugin) Close() error {
	p.mu.Lock()
	p.closed = true
	c := p.conn
	p.conn = nil
	p.mu.Unlock()
	if c == nil {
		return nil
	}
	return c.stop(p.cfg.StopGrace)
}

// RemoteError is an error the plugin answered with.
type RemoteError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RemoteError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("the plugin answered error %d without a message", e.Code)
	}
	return e.Message
}

// ProtocolError is output that breaks the protocol.
type ProtocolError struct{ Reason string }

func (e *ProtocolError) Error() string { return "the plugin broke the protocol: " + e.Reason }

// ExitError reports a plugin process that ended while calls waited on it.
type ExitError struct {
	Err    error
	Stderr string // its last lines of standard error
}

func (e *ExitError) Error() string {
	msg := "the plugin process ended: " + e.Err.Error()
	if e.Stderr != "" {
		msg += "; its last output on stderr: " + e.Stderr
	}
	return msg
}

func (e *ExitError) Unwrap() error { return e.Err }

// call sends one request on the running process (starting it if needed)
// and waits for its answer.
func (p *Plugin) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	for {
		c, err := p.running(ctx)
		if err != nil {
			return nil, err
		}
		out, err := c.call(ctx, method, params)
		var gone *endedBeforeSend
		if errors.As(err, &gone) {
			// The process ended between being handed out and this call: the
			// request was never sent, so a fresh process may take it.
			continue
		}
		return out, err
	}
}

// endedBeforeSend is a call refused because its process had already ended:
// nothing was sent.
type endedBeforeSend struct{ err error }

func (e *endedBeforeSend) Error() string { return e.err.Error() }
func (e *endedBeforeSend) Unwrap() error { return e.err }

// running returns the live process, starting one when there is none.
func (p *Plugin) running(ctx context.Context) (*conn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errors.New("the plugin is closed")
	}
	if p.conn != nil && !p.conn.ended() {
		return p.conn, nil
	}
	if wait := p.cfg.Restart - time.Since(p.lastStart); !p.lastStart.IsZero() && wait > 0 {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	p.lastStart = time.Now()
	c, err := startConn(p.cfg)
	if err != nil {
		return nil, err
	}
	p.conn = c
	return c, nil
}

// conn is one run of the plugin process.
type conn struct {
	cmd    *osexec.Cmd
	stdin  io.WriteCloser
	log    zerolog.Logger
	stderr *tail

	writeMu sync.Mutex
	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan response
	done    chan struct{} // closed when the process is gone
	err     error         // why, once done is closed
}

type response struct {
	result json.RawMessage
	err    error
}

func startConn(cfg Config) (*conn, error) {
	cmd := osexec.Command(cfg.Command[0], cfg.Command[1:]...)
	cmd.Dir = cfg.Dir
	cmd.Env = append(append(os.Environ(), cfg.Env...), fmt.Sprintf("CAIRN_PLUGIN_PROTOCOL=%d", ProtocolVersion))
	// Its own process group, so that stopping it reaches what it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	c := &conn{
		cmd: cmd, stdin: stdin, stderr: newTail(8),
		log:     cfg.Log.With().Str("plugin", cfg.Command[0]).Logger(),
		pending: map[int64]chan response{}, done: make(chan struct{}),
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", strings.Join(cfg.Command, " "), err)
	}
	stderrDone := make(chan struct{})
	go func() { defer close(stderrDone); c.stderr.read(stderr, c.log) }()
	go c.read(stdout, stderrDone)
	return c, nil
}

func (c *conn) ended() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// read delivers answers until the output ends or breaks the protocol, then
// fails every waiting call with the reason.
func (c *conn) read(stdout io.Reader, stderrDone <-chan struct{}) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), MaxLine)
	var failure error
	for sc.Scan() {
		line := sc.Bytes()
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		var msg struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      *int64          `json:"id"`
			Result  json.RawMessage `json:"result"`
			Error   *RemoteError    `json:"error"`
		}
		if err := json.Unmarshal(line, &msg); err != nil || msg.JSONRPC != "2.0" || msg.ID == nil {
			failure = &ProtocolError{Reason: fmt.Sprintf("a line on stdout is not a JSON-RPC 2.0 response with an id: %s (write logs to stderr)", snippet(line))}
			break
		}
		c.mu.Lock()
		ch, ok := c.pending[*msg.ID]
		delete(c.pending, *msg.ID)
		c.mu.Unlock()
		if !ok {
			// The caller gave up (its context ended) before the answer came.
			c.log.Debug().Int64("id", *msg.ID).Msg("answer to a call no longer waited for")
			continue
		}
		switch {
		case msg.Error != nil:
			ch <- response{err: msg.Error}
		case msg.Result == nil:
			ch <- response{err: &ProtocolError{Reason: fmt.Sprintf("response %d has neither result nor error", *msg.ID)}}
		default:
			ch <- response{result: msg.Result}
		}
	}
	if failure == nil {
		failure = sc.Err()
		if errors.Is(failure, bufio.ErrTooLong) {
			failure = &ProtocolError{Reason: fmt.Sprintf("a line on stdout is longer than %d bytes", MaxLine)}
		}
	}
	if failure != nil {
		// A plugin that breaks the protocol cannot be trusted with the calls
		// still in flight: end it, and start afresh on the next call.
		killGroup(c.cmd)
	}
	// Wait reads no more of stderr: let its reader finish first, unless a
	// child the plugin left behind holds stderr open.
	select {
	case <-stderrDone:
	case <-time.After(time.Second):
	}
	werr := c.cmd.Wait()
	if failure == nil {
		failure = werr
		if failure == nil {
			failure = errors.New("it exited with status 0")
		}
		failure = &ExitError{Err: failure, Stderr: c.stderr.String()}
	}
	c.mu.Lock()
	c.err = failure
	for id, ch := range c.pending {
		ch <- response{err: failure}
		delete(c.pending, id)
	}
	close(c.done)
	c.mu.Unlock()
}

func (c *conn) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	c.mu.Lock()
	if c.ended() {
		err := c.err
		c.mu.Unlock()
		return nil, &endedBeforeSend{err}
	}
	c.nextID++
	id := c.nextID
	ch := make(chan response, 1)
	c.pending[id] = ch
	c.mu.Unlock()

	line, err := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int64  `json:"id"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{"2.0", id, method, params})
	if err != nil {
		c.forget(id)
		return nil, fmt.Errorf("encode the request: %w", err)
	}
	c.writeMu.Lock()
	_, err = c.stdin.Write(append(line, '\n'))
	c.writeMu.Unlock()
	if err != nil {
		c.forget(id)
		select {
		case <-c.done:
			return nil, c.err
		case <-time.After(time.Second):
			return nil, fmt.Errorf("write to the plugin: %w", err)
		}
	}
	select {
	case r := <-ch:
		return r.result, r.err
	case <-ctx.Done():
		c.forget(id)
		return nil, ctx.Err()
	}
}

func (c *conn) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// stop closes stdin and waits for the process, killing it after grace.
func (c *conn) stop(grace time.Duration) error {
	_ = c.stdin.Close()
	select {
	case <-c.done:
		return nil
	case <-time.After(grace):
		killGroup(c.cmd)
		<-c.done
		return fmt.Errorf("the plugin did not exit within %s of its input closing, so it was killed", grace)
	}
}

func killGroup(cmd *osexec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// tail logs the plugin's stderr line by line and keeps the last lines for
// error messages.
type tail struct {
	mu    sync.Mutex
	lines []string
	max   int
}

func newTail(max int) *tail { return &tail{max: max} }

func (t *tail) read(r io.Reader, log zerolog.Logger) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 64<<10)
	for sc.Scan() {
		line := sc.Text()
		log.Info().Str("stderr", line).Msg("plugin output")
		t.mu.Lock()
		t.lines = append(t.lines, line)
		if len(t.lines) > t.max {
			t.lines = t.lines[1:]
		}
		t.mu.Unlock()
	}
	// A line too long for the scanner ends the scan; keep draining so the
	// plugin never blocks writing to stderr.
	_, _ = io.Copy(io.Discard, r)
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, " | ")
}

func snippet(raw []byte) string {
	const n = 200
	s := strings.ToValidUTF8(string(raw), "?")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
