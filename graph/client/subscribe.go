package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"cairn/internal/wsframe"
)

// Protocol is a subscription transport.
type Protocol string

const (
	// TransportWS is graphql-transport-ws, the protocol of the graphql-ws
	// library; the default.
	TransportWS Protocol = "graphql-transport-ws"
	// LegacyWS is graphql-ws, the protocol of subscriptions-transport-ws.
	LegacyWS Protocol = "graphql-ws"
	// SSE is server-sent events over HTTP POST.
	SSE Protocol = "sse"
)

// ErrComplete is returned by Next when the server completed the operation.
var ErrComplete = errors.New("subscription completed")

// CloseError is a WebSocket connection the server closed, with its code and
// reason (4401: the token was refused or stopped working).
type CloseError struct {
	Code   int
	Reason string
}

func (e *CloseError) Error() string {
	return fmt.Sprintf("server closed the connection (%d): %s", e.Code, e.Reason)
}

// DialError is a WebSocket that could not be opened at all (no upgrade, a
// proxy that refuses it, another subprotocol): the cue for a client that can
// to use another transport.
type DialError struct{ Err error }

func (e *DialError) Error() string { return "open a WebSocket: " + e.Err.Error() }
func (e *DialError) Unwrap() error { return e.Err }

// Subscription is one running subscription. Next returns its results in
// order; Close ends it.
type Subscription struct {
	next  func(ctx context.Context) (*Response, error)
	do    func(ctx context.Context, req Request) (*Response, error)
	close func()
	once  sync.Once
}

// ErrNotMultiplexed is Do on a subscription whose transport carries one
// operation alone (server-sent events).
var ErrNotMultiplexed = errors.New("this subscription's transport carries no other operation")

// Do runs another operation (a query or mutation) over the subscription's
// WebSocket and returns its result, as Raw does over HTTP; safe to call
// from several goroutines, and beside Next. As with Next, a ctx that ends
// while Do reads the connection (nobody else was reading) ends the
// connection. An error other than the operation's own (which come in the
// response) says the connection could not carry it: the caller may send
// it over HTTP instead, with the same command id where it must not be
// applied twice.
func (s *Subscription) Do(ctx context.Context, req Request) (*Response, error) {
	if s.do == nil {
		return nil, ErrNotMultiplexed
	}
	return s.do(ctx, req)
}

// Next returns the next result: a response (which may carry errors, such as
// a slow subscriber's CONFLICT with a cursor to resume from), ErrComplete
// after the last one, a *CloseError, or a transport error. A ctx that ends
// while Next waits ends the subscription's connection; one that ended
// before the call makes it return ctx's error at once, the subscription
// still usable.
func (s *Subscription) Next(ctx context.Context) (*Response, error) { return s.next(ctx) }

// Close ends the subscription and its connection.
func (s *Subscription) Close() { s.once.Do(s.close) }

// Subscribe starts an operation over the protocol p.
// A replica that refuses the connection is passed over for the next at once,
// as in Raw: nothing reached it.
func (c *Client) Subscribe(ctx context.Context, p Protocol, req Request) (*Subscription, error) {
	for range len(c.ends.urls) - 1 {
		sub, err := c.subscribe(ctx, p, req)
		if err == nil || !refused(err) || ctx.Err() != nil {
			return sub, err
		}
	}
	return c.subscribe(ctx, p, req)
}

func (c *Client) subscribe(ctx context.Context, p Protocol, req Request) (*Subscription, error) {
	switch p {
	case SSE:
		return c.subscribeSSE(ctx, req)
	case TransportWS, LegacyWS, "":
		if p == "" {
			p = TransportWS
		}
		return c.subscribeWS(ctx, p, req)
	}
	return nil, fmt.Errorf("unknown subscription protocol %q", p)
}

type wsMessage struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
	// result is a "next" message's payload, decoded already (nextResult).
	result *Response
}

// response is the result a "next" (or legacy "data") message carries, or
// the errors of an "error" message.
func (m wsMessage) response() (*Response, error) {
	if m.Type == "error" {
		var errs Errors
		if err := json.Unmarshal(m.Payload, &errs); err != nil {
			var one ErrorItem
			_ = json.Unmarshal(m.Payload, &one)
			errs = Errors{one}
		}
		return &Response{Errors: errs}, nil
	}
	if m.result != nil {
		return m.result, nil
	}
	var r Response
	if err := json.Unmarshal(m.Payload, &r); err != nil {
		return nil, fmt.Errorf("malformed result: %w", err)
	}
	return &r, nil
}

// nextPrefix starts every result of the one operation (id "1") a
// subscription runs, as Cairn writes it.
var nextPrefix = []byte(`{"id":"1","type":"next","payload":`)

// nextResult decodes a result written as Cairn writes them in one pass
// instead of two (the message, then its payload): a subscriber of a busy
// log decodes thousands a second. Any other message, or one whose payload
// does not decode alone, is left to the general decoding.
func nextResult(b []byte) (*Response, bool) {
	if !bytes.HasPrefix(b, nextPrefix) || len(b) < len(nextPrefix)+2 || b[len(b)-1] != '}' {
		return nil, false
	}
	r, err := decodeResult(b[len(nextPrefix) : len(b)-1])
	return r, err == nil
}

// dataOnly starts a result that is data alone, as most are.
var dataOnly = []byte(`{"data":`)

// decodeResult decodes one result. A result that is data alone is checked
// in one pass and its data copied out, rather than decoded generally (which
// reads the data three times over); anything else is decoded generally.
func decodeResult(b []byte) (*Response, error) {
	if bytes.HasPrefix(b, dataOnly) && len(b) > len(dataOnly)+1 && b[len(b)-1] == '}' {
		if data := b[len(dataOnly) : len(b)-1]; validJSON(data) {
			return &Response{Data: bytes.Clone(bytes.TrimSpace(data))}, nil
		}
	}
	var r Response
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

func wsURL(u string) string {
	switch {
	case strings.HasPrefix(u, "https://"):
		return "wss://" + strings.TrimPrefix(u, "https://")
	case strings.HasPrefix(u, "http://"):
		return "ws://" + strings.TrimPrefix(u, "http://")
	}
	return u
}

func (c *Client) subscribeWS(ctx context.Context, p Protocol, req Request) (*Subscription, error) {
	// A WebSocket outlives any request timeout: dial with the client's
	// transport but without its timeout.
	hc := c.http
	if hc.Timeout > 0 {
		hc = &http.Client{Transport: hc.Transport, Jar: hc.Jar, CheckRedirect: hc.CheckRedirect}
	}
	header := http.Header{}
	if c.token != "" {
		header.Set("Authorization", "Bearer "+c.token)
	}
	dctx, cancelDial := context.WithTimeout(ctx, 30*time.Second)
	ep := c.ends.now()
	conn, resp, err := dialWS(dctx, hc, ep, header, string(p))
	cancelDial()
	if err != nil {
		if resp != nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
			return nil, &HTTPError{Status: resp.StatusCode, Body: "the server refused the token"}
		}
		if resp != nil && resp.StatusCode == http.StatusServiceUnavailable {
			c.ends.failed(ep) // the replica cannot reach its database
		}
		if resp == nil && ctx.Err() == nil {
			// The next attempt (the caller's reconnect) tries another replica.
			c.ends.failed(ep)
		}
		return nil, &DialError{fmt.Errorf("connect to %s: %w", wsURL(ep), err)}
	}
	life, cancel := context.WithCancel(context.Background())
	var reading atomic.Bool // a read waits for the server
	watch := &readWatch{abort: conn.closeNow}
	closeAll := func() {
		cancel()
		watch.close()
		if reading.Load() {
			// Ends the waiting read at once, as a server that no longer
			// answers would hold a closing handshake up.
			conn.closeNow()
			return
		}
		conn.close(wsframe.StatusNormalClosure, "done")
	}
	// Writes before the subscription starts are the caller's (ctx); later
	// ones (pongs) belong to the connection, which outlives that ctx.
	write := func(ctx context.Context, m wsMessage) error {
		ctx, cancel := context.WithTimeout(ctx, wsWriteTimeout)
		defer cancel()
		b, _ := json.Marshal(m)
		return conn.write(ctx, wsframe.Text, b)
	}
	// Messages are read one at a time into one buffer; what is kept of one
	// is copied out as it is decoded. What ends a read that waits is the
	// connection closing: when the caller's context ends, when the
	// subscription is closed, or when the server was silent for the idle
	// limit (a timer that runs only while a read of the network waits).
	var buf []byte
	var idle *time.Timer
	var idled atomic.Bool
	if c.idle > 0 {
		idle = time.AfterFunc(time.Hour, func() {
			idled.Store(true)
			conn.closeNow()
		})
		idle.Stop()
	}
	var readCtx context.Context // of the read under way
	conn.src.begin = func() error {
		if err := watch.beginRead(readCtx); err != nil {
			return err
		}
		if idle != nil {
			idle.Reset(c.idle)
		}
		reading.Store(true)
		return nil
	}
	conn.src.end = func() {
		reading.Store(false)
		if idle != nil {
			idle.Stop()
		}
		watch.end()
	}
	read := func(ctx context.Context) (wsMessage, error) {
		if err := ctx.Err(); err != nil {
			return wsMessage{}, fmt.Errorf("read from %s: %w", wsURL(ep), err)
		}
		readCtx = ctx
		if cap(buf) > 256<<10 {
			buf = nil // a large message's buffer is not kept
		}
		var err error
		buf, err = conn.readMessage(buf)
		if err != nil {
			var ce *CloseError
			switch {
			case ctx.Err() != nil:
				return wsMessage{}, fmt.Errorf("read from %s: %w", wsURL(ep), ctx.Err())
			case idled.Load():
				return wsMessage{}, fmt.Errorf("read from %s: the server sent nothing for %s: %w", wsURL(ep), c.idle, context.DeadlineExceeded)
			case errors.As(err, &ce):
				if ce.Code == wsframe.StatusTryAgainLater {
					c.ends.failed(ep) // the replica cannot reach its database
				}
				return wsMessage{}, ce
			}
			return wsMessage{}, fmt.Errorf("read from %s: %w", wsURL(ep), err)
		}
		if r, ok := nextResult(buf); ok {
			return wsMessage{Type: "next", result: r}, nil
		}
		var m wsMessage
		if err := json.Unmarshal(buf, &m); err != nil {
			return wsMessage{}, fmt.Errorf("malformed message from server: %w", err)
		}
		return m, nil
	}
	init := map[string]any{}
	if c.token != "" {
		init["authorization"] = "Bearer " + c.token
	}
	ib, _ := json.Marshal(init)
	if err := write(ctx, wsMessage{Type: "connection_init", Payload: ib}); err != nil {
		closeAll()
		return nil, err
	}
	for {
		m, err := read(ctx)
		if err != nil {
			closeAll()
			return nil, err
		}
		if m.Type == "connection_ack" {
			break
		}
		if m.Type == "connection_error" {
			closeAll()
			return nil, fmt.Errorf("server refused the connection: %s", m.Payload)
		}
	}
	start := "subscribe"
	if p == LegacyWS {
		start = "start"
	}
	rb, _ := json.Marshal(req)
	if err := write(ctx, wsMessage{ID: "1", Type: start, Payload: rb}); err != nil {
		closeAll()
		return nil, err
	}
	// Other operations (Do) run under ids of their own; Next hands their
	// messages to whoever waits for them.
	others := &otherOps{waiting: map[string]chan wsMessage{}, closed: make(chan struct{})}
	closeOthers := sync.OnceFunc(func() { close(others.closed) })
	done := false
	// turn is held by whoever reads the connection: Next, or a Do that
	// found nobody reading. What a Do read of the subscription's waits in
	// queued for Next, and a connection it found broken in broken.
	turn := newReadTurn()
	readOn := make(chan struct{}) // closed: a Do that just read looks again at once
	close(readOn)
	var queued []wsMessage
	var broken error
	next := func(ctx context.Context) (*Response, error) {
		turn.take()
		defer turn.give()
		if done {
			return nil, ErrComplete
		}
		for {
			var m wsMessage
			switch {
			case len(queued) > 0:
				m, queued = queued[0], queued[1:]
			case broken != nil:
				return nil, broken
			default:
				var err error
				if m, err = read(ctx); err != nil {
					return nil, err
				}
			}
			if m.ID != "" && m.ID != "1" {
				others.deliver(m)
				continue
			}
			switch m.Type {
			case "next", "data":
				return m.response()
			case "error":
				done = true
				return m.response()
			case "complete":
				done = true
				return nil, ErrComplete
			case "ping":
				_ = write(life, wsMessage{Type: "pong"})
			case "ka", "pong":
			case "connection_error":
				return nil, fmt.Errorf("connection error: %s", m.Payload)
			}
		}
	}
	do := func(ctx context.Context, req Request) (*Response, error) {
		id, replies := others.open()
		defer others.forget(id)
		rb, err := json.Marshal(req)
		if err != nil {
			return nil, fmt.Errorf("encode request: %w", err)
		}
		if err := write(ctx, wsMessage{ID: id, Type: start, Payload: rb}); err != nil {
			return nil, fmt.Errorf("send over %s: %w", wsURL(ep), err)
		}
		// The answer is read by Next when it reads; when nobody does, by
		// Do itself, which keeps what it reads of the subscription for
		// Next. Whoever reads wakes the waiting Dos when it stops, so that
		// one of them reads on: a Do waits without waking up otherwise
		// (10,000 agents' reports in flight at once, each looking every
		// 50 ms, cost more than the reports).
		readOne := func() (<-chan struct{}, error) {
			given, ok := turn.tryTake()
			if !ok {
				return given, nil // wait for the reader to stop
			}
			defer turn.give()
			if broken != nil {
				return nil, broken
			}
			if len(replies) > 0 {
				return nil, nil // delivered by another reader meanwhile
			}
			if len(queued) >= maxQueued {
				// Next is not taking them: look again in a moment (rare,
				// and no signal says when Next took some).
				later := make(chan struct{})
				time.AfterFunc(50*time.Millisecond, func() { close(later) })
				return later, nil
			}
			m, err := read(ctx)
			if err != nil {
				broken = err
				return nil, err
			}
			switch {
			case m.ID != "" && m.ID != "1":
				others.deliver(m)
			case m.Type == "ping":
				_ = write(life, wsMessage{Type: "pong"})
			case m.Type == "ka" || m.Type == "pong":
			default:
				queued = append(queued, m)
			}
			return readOn, nil // the answer may be next
		}
		for {
			given, err := readOne()
			if err != nil {
				return nil, err
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-others.closed:
				return nil, fmt.Errorf("the connection to %s closed before the answer came", wsURL(ep))
			case <-given:
			case m := <-replies:
				switch m.Type {
				case "next", "data", "error":
					return m.response()
				case "complete":
					return nil, errors.New("the operation ended without a result")
				}
			}
		}
	}
	return &Subscription{next: next, do: do, close: func() { closeOthers(); closeAll() }}, nil
}

// readTurn is the right to read a subscription's connection, held by one
// reader at a time (Next, or a Do that found nobody reading), with a signal
// for the Dos waiting to read in turn.
type readTurn struct {
	mu      sync.Mutex // held by the reader
	givenMu sync.Mutex
	given   chan struct{} // closed when the turn is next given up
	watched bool          // given was handed out since it was made
}

func newReadTurn() *readTurn { return &readTurn{given: make(chan struct{})} }

// take waits for the turn.
func (t *readTurn) take() { t.mu.Lock() }

// tryTake takes the turn if nobody holds it. If somebody does, it returns a
// channel closed once they gave it up: it was fetched before the attempt,
// so a reader that stops in between is not missed.
func (t *readTurn) tryTake() (<-chan struct{}, bool) {
	t.givenMu.Lock()
	given := t.given
	t.watched = true
	t.givenMu.Unlock()
	if t.mu.TryLock() {
		return nil, true
	}
	return given, false
}

// give gives the turn up and wakes those waiting for it. With nobody
// waiting (a subscription's reader alone, at each of its results) the
// channel is kept for the next to wait on.
func (t *readTurn) give() {
	t.mu.Unlock()
	t.givenMu.Lock()
	if t.watched {
		close(t.given)
		t.given, t.watched = make(chan struct{}), false
	}
	t.givenMu.Unlock()
}

// maxQueued bounds the subscription's messages a Do reads and keeps for
// Next; past it, Do waits for Next to read.
const maxQueued = 1024

// otherOps are the operations run over a subscription's WebSocket besides
// the subscription itself, waiting for their answers.
type otherOps struct {
	mu      sync.Mutex
	last    int // id of the last opened; the subscription is 1
	waiting map[string]chan wsMessage
	closed  chan struct{} // the subscription was closed
}

func (o *otherOps) open() (string, chan wsMessage) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.last == 0 {
		o.last = 1
	}
	o.last++
	id := strconv.Itoa(o.last)
	ch := make(chan wsMessage, 2) // a result, then complete
	o.waiting[id] = ch
	return id, ch
}

func (o *otherOps) forget(id string) {
	o.mu.Lock()
	delete(o.waiting, id)
	o.mu.Unlock()
}

// deliver hands a message to the operation it is for; one nobody waits for
// any more (it gave up) is dropped.
func (o *otherOps) deliver(m wsMessage) {
	o.mu.Lock()
	ch := o.waiting[m.ID]
	o.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case ch <- m:
	default:
	}
}

func (c *Client) subscribeSSE(ctx context.Context, req Request) (*Subscription, error) {
	body, _ := json.Marshal(req)
	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ep := c.ends.now()
	hr, err := http.NewRequestWithContext(life, http.MethodPost, ep, bytes.NewReader(body))
	if err != nil {
		cancel()
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "text/event-stream")
	if c.token != "" {
		hr.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(hr)
	if err != nil {
		cancel()
		if ctx.Err() == nil {
			c.ends.failed(ep)
		}
		return nil, fmt.Errorf("reach %s: %w", ep, err)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		defer resp.Body.Close()
		defer cancel()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		var r Response
		if json.Unmarshal(b, &r) == nil && len(r.Errors) > 0 {
			return nil, r.Errors
		}
		return nil, &HTTPError{Status: resp.StatusCode, Body: string(b)}
	}
	watch := &readWatch{abort: cancel}
	var readCtx context.Context // of the read under way
	src := &watchedReader{r: resp.Body, end: watch.end, begin: func() error { return watch.beginRead(readCtx) }}
	sc := bufio.NewScanner(src)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	done := false
	var data []byte // the event being read, reused: results are decoded out of it
	next := func(ctx context.Context) (*Response, error) {
		if done {
			return nil, ErrComplete
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		readCtx = ctx
		complete := false // the event is "complete"
		data = data[:0]
		for sc.Scan() {
			line := sc.Bytes()
			switch {
			case len(line) == 0:
				if complete {
					done = true
					return nil, ErrComplete
				}
				if len(data) > 0 {
					r, err := decodeResult(data)
					if err != nil {
						return nil, fmt.Errorf("malformed result: %w", err)
					}
					return r, nil
				}
				complete, data = false, data[:0]
			case bytes.HasPrefix(line, []byte("event:")):
				// Compared in place: made a string, each event's name was
				// an allocation for every result a subscriber reads.
				complete = string(bytes.TrimSpace(line[6:])) == "complete"
			case bytes.HasPrefix(line, []byte("data:")):
				data = append(data, bytes.TrimSpace(line[5:])...)
			}
		}
		if err := sc.Err(); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, err
		}
		done = true
		return nil, ErrComplete
	}
	return &Subscription{next: next, close: func() { cancel(); watch.close(); resp.Body.Close() }}, nil
}
