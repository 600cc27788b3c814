package transport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	gqltransport "github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/coder/websocket"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"cairn/internal/wsframe"
)

// protoTransportWS is the subprotocol of the graphql-ws library.
const protoTransportWS = "graphql-transport-ws"

// Close codes of graphql-transport-ws this server sends besides those in
// session.go.
const (
	closeDuplicateID  = 4409
	closeTooManyInits = 4429
	// closeNoPong ends a connection whose peer answered no ping within two
	// keep-alive intervals (RFC 6455's policy violation).
	closeNoPong = 1008
)

// writeTimeout bounds one message written to a peer; a peer that reads
// nothing for that long is taken for gone.
const writeTimeout = 10 * time.Second

// wsServer serves graphql-transport-ws on its own, and hands the older
// graphql-ws protocol (and a request that names no subprotocol) to gqlgen's
// transport.
//
// It exists for what a connection costs while it waits, since agents keep
// thousands of them open: one goroutine per connection, its reader, with
// the buffers the HTTP server already had. Keep-alives and the token's
// re-checks run from timers; a subscription whose resolver says when a value
// is ready (Pushed) has no goroutine of its own while it waits, and other
// operations get one each, as in gqlgen's transport.
type wsServer struct {
	h      *Handler
	legacy gqltransport.Websocket
}

var _ graphql.Transport = wsServer{}

func (s wsServer) Supports(r *http.Request) bool { return r.Header.Get("Upgrade") != "" }

func (s wsServer) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	if !offers(r, protoTransportWS) {
		s.legacy.Do(w, r, exec)
		return
	}
	hijack := &smallBuffers{ResponseWriter: w, held: s.h.heldBuffers}
	ws, err := websocket.Accept(hijack, r, &websocket.AcceptOptions{Subprotocols: []string{protoTransportWS}})
	if err != nil {
		// Accept has answered the request already.
		s.h.log.Debug().Err(err).Msg("refused a WebSocket upgrade")
		return
	}
	ws.SetReadLimit(s.h.opts.MaxBodyBytes)
	// The connection outlives the request, whose goroutine ends here: its
	// stack grew while the request was read and routed, and a fresh one
	// for the reader stays small.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	c := &wsConnection{h: s.h, exec: exec, ws: ws, conn: hijack.conn, buffered: hijack.reader, early: hijack.early, ctx: ctx, cancel: cancel, ops: map[string]*wsOperation{}}
	s.h.wsOpen.Add(1)
	if holder, ok := ctx.Value(connKey{}).(*wsConn); ok {
		holder.mu.Lock()
		holder.conn = c
		holder.mu.Unlock()
	}
	go c.serve()
}

// wsBufferSize is the size of a connection's read and write buffers. The
// HTTP server's are 4 KiB each; the messages of a waiting connection
// (pings, leases) are far smaller, and larger ones pass through in pieces.
const wsBufferSize = 1024

// smallBuffers hands the WebSocket library a hijacked connection with
// buffers of wsBufferSize, so that the HTTP server's larger ones are freed,
// and keeps the connection, which it wraps to be corked.
type smallBuffers struct {
	http.ResponseWriter
	held   *heldBuffers // the corked connections' buffers
	conn   *corkConn
	reader *bufio.Reader // the library's, over conn
	// early says frames came with the upgrade request: the library moves
	// them in front of conn, where reader does not count them buffered.
	early bool
}

func (w *smallBuffers) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, fmt.Errorf("hijack: %T does not support it", w.ResponseWriter)
	}
	raw, brw, err := h.Hijack()
	if err != nil {
		return nil, nil, err
	}
	if brw.Writer.Buffered() > 0 {
		if err := brw.Writer.Flush(); err != nil {
			raw.Close()
			return nil, nil, err
		}
	}
	conn := &corkConn{Conn: raw, buffers: w.held}
	w.conn = conn
	n := brw.Reader.Buffered()
	if n == 0 {
		w.reader = bufio.NewReaderSize(conn, wsBufferSize)
		return conn, bufio.NewReadWriter(w.reader, bufio.NewWriterSize(conn, wsBufferSize)), nil
	}
	// What the client sent after its request (its first frames) moves into
	// the new reader's buffer: the library reads what is buffered, then
	// the connection.
	early, _ := brw.Reader.Peek(n)
	r := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(bytes.Clone(early)), conn), max(wsBufferSize, n))
	if _, err := r.Peek(n); err != nil {
		conn.Close()
		return nil, nil, err
	}
	w.reader, w.early = r, true
	return conn, bufio.NewReadWriter(r, bufio.NewWriterSize(conn, wsBufferSize)), nil
}

func (w *smallBuffers) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// offers says whether the upgrade request lists the subprotocol.
func offers(r *http.Request, proto string) bool {
	for p := range wsframe.HeaderTokens(r.Header, "Sec-WebSocket-Protocol") {
		if p == proto {
			return true
		}
	}
	return false
}

type wsConnection struct {
	h      *Handler
	exec   graphql.GraphExecutor
	ws     *websocket.Conn
	conn   *corkConn // under ws: corked while a subscription writes a burst
	cancel context.CancelFunc
	// buffered is the library's reader over conn: what it holds is read
	// without waiting (awaitMessage). early says frames came with the
	// upgrade request: the first read takes them all into buffered.
	buffered *bufio.Reader
	early    bool

	lastRead  atomic.Int64 // unix nanoseconds of the last message read
	lastSpoke atomic.Int64 // likewise, of the last that was not a pong

	mu     sync.Mutex
	ctx    context.Context // the connection's; carries the session after connection_init
	inited bool
	closed bool
	// closing is closed once a close handshake WriteClose began has ended.
	closing chan struct{}
	ops     map[string]*wsOperation
	timer   *time.Timer // the init timeout, then the keep-alive
	// interval is the keep-alive interval the timer was last set with.
	interval time.Duration
}

// wsOperation is one running operation. The peer may reuse an id once the
// operation ended, so an operation is known by this record, not its id.
type wsOperation struct {
	id     string
	cancel context.CancelFunc
	// quotedID is id as JSON, made once: every result of a subscription
	// is framed with it.
	quotedID []byte
}

// wsMessage is one graphql-transport-ws message.
type wsMessage struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

func (c *wsConnection) serve() {
	defer c.end()
	c.mu.Lock()
	c.timer = time.AfterFunc(initTimeout, func() {
		c.mu.Lock()
		inited := c.inited
		c.mu.Unlock()
		if !inited {
			c.WriteClose(closeInitTimeout, "connection initialisation timeout")
		}
	})
	ctx := c.ctx
	c.mu.Unlock()
	for {
		c.awaitMessage()
		m, err := c.read()
		if err != nil {
			if ctx.Err() == nil && websocket.CloseStatus(err) == -1 {
				c.h.log.Debug().Err(err).Msg("a WebSocket connection ended")
			}
			return
		}
		start := graphql.Now()
		c.lastRead.Store(start.UnixNano())
		if m == nil {
			c.WriteClose(closeBadRequest, "invalid message: send graphql-transport-ws messages as JSON objects")
			return
		}
		if m.Type != "pong" {
			c.lastSpoke.Store(start.UnixNano())
		}
		if !c.handle(*m, start) {
			return
		}
	}
}

// awaitMessage waits for the peer's next message on a shallow stack
// (corkConn.awaitRead), unless the library holds some of it already. Once
// the connection is closing, the library's close handshake reads too, and
// the reader leaves the wait to the library: the check is made under c.mu,
// which WriteClose takes before the handshake starts.
func (c *wsConnection) awaitMessage() {
	if c.conn == nil || c.buffered == nil {
		return
	}
	if c.early {
		c.early = false
		return
	}
	c.mu.Lock()
	wait := !c.closed && c.buffered.Buffered() == 0
	c.mu.Unlock()
	if wait {
		c.conn.awaitRead()
	}
}

// read reads and decodes the next message; nil when it is not one of
// graphql-transport-ws. The message is read into a buffer of the
// handler's, given back once decoded (decoding copies what it keeps): each
// message read into one of its own was a third of the reader's time in a
// fan-out to 10,000 agents, most of it collecting the garbage, and the
// reader waits for the next frame holding no buffer at all.
func (c *wsConnection) read() (*wsMessage, error) {
	// The library is given a context that never ends: given one that can,
	// it registers a callback on it for every frame it reads. The read ends
	// when the connection closes, which is also what ends the connection's
	// context (end).
	_, r, err := c.ws.Reader(context.Background())
	if err != nil {
		return nil, err
	}
	buf := c.h.heldBuffers.get()
	defer c.h.heldBuffers.put(buf)
	b := (*buf)[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			*buf = b
			return nil, err
		}
	}
	*buf = b
	var m wsMessage
	if err := json.Unmarshal(b, &m); err != nil || m.Type == "" {
		return nil, nil
	}
	return &m, nil
}

// handle acts on one message; false ends the connection.
func (c *wsConnection) handle(m wsMessage, start time.Time) bool {
	switch m.Type {
	case "connection_init":
		return c.init(m.Payload)
	case "ping":
		c.write(wsMessage{Type: "pong", Payload: m.Payload})
	case "pong":
	case "subscribe":
		c.mu.Lock()
		inited, dup := c.inited, c.ops[m.ID] != nil
		c.mu.Unlock()
		switch {
		case !inited:
			c.WriteClose(closeUnauthorized, "Unauthorized")
			return false
		case m.ID == "":
			c.WriteClose(closeBadRequest, "a subscribe message needs an id")
			return false
		case dup:
			c.WriteClose(closeDuplicateID, "Subscriber for "+truncate(m.ID, 80)+" already exists")
			return false
		}
		c.subscribe(m.ID, m.Payload, start)
	case "complete":
		c.mu.Lock()
		op := c.ops[m.ID]
		c.mu.Unlock()
		c.finish(op)
	default:
		c.WriteClose(closeBadRequest, "unexpected message "+truncate(m.Type, 60))
		return false
	}
	return true
}

// initTimeout is how long a connection may wait before connection_init.
const initTimeout = 10 * time.Second

func (c *wsConnection) init(payload json.RawMessage) bool {
	c.mu.Lock()
	if c.inited {
		c.mu.Unlock()
		c.WriteClose(closeTooManyInits, "Too many initialisation requests")
		return false
	}
	c.inited = true
	c.timer.Stop()
	ctx := c.ctx
	c.mu.Unlock()
	var p gqltransport.InitPayload
	if len(payload) > 0 && string(payload) != "null" {
		if err := json.Unmarshal(payload, &p); err != nil {
			c.WriteClose(closeBadRequest, "connection_init's payload must be a JSON object")
			return false
		}
	}
	// Checking the token may read the database, which takes a deep stack:
	// the reader waits for it on a goroutine of its own, so that its stack
	// stays small for as long as the connection lasts.
	var code int
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if r := recover(); r != nil {
				code, err = 1011, c.h.recoverPanic(ctx, r)
			}
		}()
		ctx, code, err = c.h.initSession(ctx, p)
	}()
	<-done
	if err != nil {
		c.WriteClose(code, err.Error())
		return false
	}
	c.write(wsMessage{Type: "connection_ack"})
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ctx = ctx
	if !c.closed {
		c.interval = c.h.keepAliveInterval()
		c.timer = time.AfterFunc(c.interval, c.keepAlive)
	}
	return true
}

// maxKeepAlivesPerSecond bounds the pings all of a server's WebSocket
// connections are sent: with 10,000 agents connected, a ping every 15 s
// and its pong were a quarter of the server's idle CPU.
const maxKeepAlivesPerSecond = 500

// keepAliveInterval is the keep-alive interval, stretched when so many
// connections are open that pinging each at that interval would exceed
// maxKeepAlivesPerSecond, but never past twice the interval: a peer takes
// a connection for dead after some missed pings (an agent after 60 s).
func (h *Handler) keepAliveInterval() time.Duration {
	spread := time.Duration(h.wsOpen.Load()) * time.Second / maxKeepAlivesPerSecond
	return max(h.opts.KeepAlive, min(2*h.opts.KeepAlive, spread))
}

// keepAlive pings the peer every keep-alive interval and ends a connection
// that sent nothing for two: the pong is due before then. A peer that sent
// a message of its own within the last half interval (an agent's
// heartbeat, say) is not pinged: it is there, and the answer it was sent
// kept the connection busy. With 10,000 agents, the pings were a seventh
// of an idle server's time. Half, not the whole interval: a peer pinged
// one tick later than it would have been has still more than an interval
// to answer, as a subscriber reading a backlog may need; with the whole
// interval, subscribers behind a flood were ended for a late pong.
func (c *wsConnection) keepAlive() {
	c.mu.Lock()
	interval := c.interval
	c.mu.Unlock()
	if time.Since(time.Unix(0, c.lastRead.Load())) > 2*interval {
		c.WriteClose(closeNoPong, fmt.Sprintf("no pong within %s", 2*interval))
		return
	}
	if time.Since(time.Unix(0, c.lastSpoke.Load())) >= interval/2 {
		c.write(wsMessage{Type: "ping"})
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.interval = c.h.keepAliveInterval()
		c.timer = time.AfterFunc(c.interval, c.keepAlive)
	}
}

// subscribe starts an operation. Parsing, validating and starting it run
// on a goroutine of their own, as an operation may wait on the database;
// the goroutine stays only if the operation's results must be waited for.
func (c *wsConnection) subscribe(id string, payload json.RawMessage, start time.Time) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(c.ctx)
	quoted, _ := json.Marshal(id) // a Go string always encodes
	op := &wsOperation{id: id, cancel: cancel, quotedID: quoted}
	c.ops[id] = op
	c.mu.Unlock()
	c.h.deps.Workers.Go(func() {
		finished := false
		defer func() {
			if r := recover(); r != nil {
				c.sendError(op, gqlerror.Errorf("%s", c.h.recoverPanic(ctx, r).Error()))
				finished = true
			}
			if finished {
				c.finish(op)
			}
		}()
		finished = c.start(ctx, op, payload, start)
	})
}

// start runs an operation up to its first wait; it reports whether the
// operation has finished.
func (c *wsConnection) start(ctx context.Context, op *wsOperation, payload json.RawMessage, start time.Time) bool {
	ctx = graphql.StartOperationTrace(ctx)
	params := &graphql.RawParams{}
	// Numbers stay json.Number, as gqlgen's other transports decode them,
	// so that an Int variable is not taken for a float.
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	if err := dec.Decode(params); err != nil {
		c.sendError(op, &gqlerror.Error{Message: "invalid json: a subscribe payload is {query, operationName, variables}"})
		return true
	}
	params.ReadTime = graphql.TraceTiming{Start: start, End: graphql.Now()}
	rc, errs := c.exec.CreateOperationContext(ctx, params)
	if errs != nil {
		resp := c.exec.DispatchError(graphql.WithOperationContext(ctx, rc), errs)
		if errcode.GetErrorKind(errs) == errcode.KindProtocol {
			c.sendError(op, resp.Errors...)
			return true
		}
		c.sendNext(op, &graphql.Response{Errors: errs})
		c.complete(op)
		return true
	}
	ctx = graphql.WithOperationContext(ctx, rc)
	var push *Push
	if rc.Operation != nil && rc.Operation.Operation == ast.Subscription {
		push = newPush(ctx, c.h.deps.Workers, c.h.shared)
		if c.conn != nil {
			push.busy, push.idle = c.conn.cork, c.conn.uncork
		}
		ctx = context.WithValue(ctx, pushKey{}, push)
	}
	responses, ctx := c.exec.DispatchOperation(ctx, rc)
	take := func(it pushed) bool { return c.drain(ctx, op, push, it, responses) }
	takeKept := func(run []pushed) { c.sendKept(op, push, run) }
	if push != nil && push.arm(take, takeKept) {
		return false
	}
	if c.conn != nil && push == nil {
		// A query's or mutation's result and its complete leave in one
		// write: agents send their reports and heartbeats this way. (Not
		// a subscription's: its results would wait for the cork.)
		c.conn.cork()
		defer c.conn.uncork()
	}
	for {
		resp := responses(ctx)
		if resp == nil {
			c.complete(op)
			return true
		}
		c.sendNext(op, resp)
	}
}

// drain writes the results a pushing resolver has made ready; it reports
// whether the operation has finished.
func (c *wsConnection) drain(ctx context.Context, op *wsOperation, push *Push, it pushed, responses graphql.ResponseHandler) (finished bool) {
	defer func() {
		if r := recover(); r != nil {
			c.sendError(op, gqlerror.Errorf("%s", c.h.recoverPanic(ctx, r).Error()))
			c.finish(op)
			finished = true
		}
	}()
	resp := push.result(ctx, it, responses)
	if resp == nil {
		c.complete(op)
		c.finish(op)
		return true
	}
	c.sendNext(op, resp)
	return false
}

// finish ends an operation and forgets it (nil: nothing to end).
func (c *wsConnection) finish(op *wsOperation) {
	if op == nil {
		return
	}
	c.mu.Lock()
	if c.ops[op.id] == op {
		delete(c.ops, op.id)
	}
	c.mu.Unlock()
	op.cancel()
}

// live reports whether op still runs under its id.
func (c *wsConnection) live(op *wsOperation) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ops[op.id] == op
}

func (c *wsConnection) sendNext(op *wsOperation, resp *graphql.Response) {
	if !c.live(op) {
		return
	}
	// The message is put together here rather than marshalled whole: that
	// would compact the result's data (the bulk of it) twice, a tenth of
	// what a subscription's event cost to deliver. It is put together in a
	// buffer of the handler's, given back once written (the connection
	// copies what it writes): a buffer kept by each operation held a few
	// KiB for every idle agent.
	buf := c.h.heldBuffers.get()
	b := append((*buf)[:0], `{"id":`...)
	b = append(b, op.quotedID...)
	b = append(b, `,"type":"next","payload":`...)
	b, err := appendResponse(b, resp)
	if err != nil {
		c.h.heldBuffers.put(buf)
		c.sendError(op, gqlerror.Errorf("could not encode a result: %v", err))
		return
	}
	*buf = append(b, '}')
	c.writeFrame(*buf)
	c.h.heldBuffers.put(buf)
}

// sendKept sends a run of kept results as the operation's "next"
// messages, framed once for every subscription of the operation that is
// sent the same run (keptRuns).
func (c *wsConnection) sendKept(op *wsOperation, push *Push, run []pushed) {
	if !c.live(op) {
		return
	}
	if c.conn == nil {
		for _, it := range run {
			c.sendNext(op, &graphql.Response{Data: it.data})
		}
		return
	}
	b := c.h.keptRuns.framed(push.op, runFraming{webSocket: true, id: op.id}, run, func(b []byte, run []pushed) []byte {
		return appendFramesNext(b, op.quotedID, run)
	})
	c.writeFrames(b)
}

// appendResponse appends a response's JSON. A plain result (data alone,
// as every event of a subscription is) is written as is: gqlgen wrote its
// data, and it is valid JSON already.
func appendResponse(b []byte, resp *graphql.Response) ([]byte, error) {
	if !plainResponse(resp) {
		r, err := json.Marshal(resp)
		return append(b, r...), err
	}
	b = append(b, `{"data":`...)
	if len(resp.Data) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, resp.Data...)
	}
	return append(b, '}'), nil
}

// plainResponse reports whether a response is data alone. gqlgen gives
// every response an extensions map, empty unless something was put in it.
func plainResponse(resp *graphql.Response) bool {
	return len(resp.Errors) == 0 && len(resp.Extensions) == 0 && resp.Label == "" && resp.Path == nil && resp.HasNext == nil
}

func (c *wsConnection) sendError(op *wsOperation, errs ...*gqlerror.Error) {
	b, err := json.Marshal(errs)
	if err != nil {
		b = []byte(`[{"message":"could not encode an error"}]`)
	}
	c.send(op, wsMessage{ID: op.id, Type: "error", Payload: b})
}

// complete tells the peer an operation ended, unless the peer ended it.
func (c *wsConnection) complete(op *wsOperation) {
	c.send(op, wsMessage{ID: op.id, Type: "complete"})
}

// send writes an operation's message while it runs: once the peer ended
// it, nothing more is said of it (its id may name another already).
func (c *wsConnection) send(op *wsOperation, m wsMessage) {
	if c.live(op) {
		c.write(m)
	}
}

// write sends one message; coder/websocket serialises concurrent writers.
// A peer that cannot take it in time loses the connection.
func (c *wsConnection) write(m wsMessage) {
	b, err := json.Marshal(m)
	if err != nil {
		c.h.log.Error().Err(err).Msg("could not encode a WebSocket message")
		return
	}
	c.writeFrame(b)
}

// writeFrame sends one encoded message. The connection under it bounds
// each write by writeTimeout (corkConn) and frames the message itself.
func (c *wsConnection) writeFrame(b []byte) {
	var err error
	if c.conn != nil {
		err = c.conn.writeText(b)
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		err = c.ws.Write(ctx, websocket.MessageText, b)
		cancel()
	}
	c.wrote(err)
}

// writeFrames writes whole frames made already (c.conn is set).
func (c *wsConnection) writeFrames(b []byte) {
	c.wrote(c.conn.writeFrames(b))
}

// wrote ends the connection after a write that failed.
func (c *wsConnection) wrote(err error) {
	switch {
	case errors.Is(err, errSealed):
		// The close handshake under way ends the connection.
	case err != nil:
		c.h.log.Debug().Err(err).Msg("writing to a WebSocket failed; closing it")
		c.ws.CloseNow()
	}
}

// WriteClose closes the connection with a code and reason of
// graphql-transport-ws; the close handshake runs in the background.
func (c *wsConnection) WriteClose(code int, reason string) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	done := make(chan struct{})
	c.closing = done
	c.mu.Unlock()
	if c.conn != nil {
		c.conn.seal()
	}
	go func() {
		defer close(done)
		// A peer already gone fails the handshake; that is logged, not
		// acted on: the connection ends either way.
		if err := c.ws.Close(websocket.StatusCode(code), truncate(reason, 120)); err != nil {
			c.h.log.Debug().Err(err).Int("code", code).Msg("a WebSocket close handshake did not complete")
		}
	}()
	return nil
}

// end runs when the reader stops: every operation ends with it.
func (c *wsConnection) end() {
	c.h.wsOpen.Add(-1)
	c.mu.Lock()
	c.closed = true
	if c.timer != nil {
		c.timer.Stop()
	}
	ops := c.ops
	c.ops = map[string]*wsOperation{}
	closing := c.closing
	c.mu.Unlock()
	for _, op := range ops {
		op.cancel()
	}
	if closing != nil {
		<-closing // the close handshake ends the connection
	} else {
		_ = c.ws.CloseNow()
	}
	c.cancel()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
