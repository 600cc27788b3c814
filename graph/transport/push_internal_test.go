package transport

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql"

	"cairn/auth"
	"cairn/domain/tenant"
	"cairn/eventstore"
	"cairn/internal/workpool"
)

// operationCtx is the context of a subscription run by p with the query.
func operationCtx(p auth.Principal, query string) context.Context {
	ctx := withSession(context.Background(), newSession(p, "token", "test"))
	return graphql.WithOperationContext(ctx, &graphql.OperationContext{RawQuery: query, Variables: map[string]any{}})
}

// executor stands for the operation's responses: each call renders the
// next value, into one buffer as gqlgen's executor does.
type executor struct {
	calls int
	buf   []byte
	data  []string
	extra map[string]any
}

func (x *executor) responses(context.Context) *graphql.Response {
	if x.calls == len(x.data) {
		return nil
	}
	x.buf = append(x.buf[:0], x.data[x.calls]...)
	x.calls++
	return &graphql.Response{Data: x.buf, Extensions: x.extra}
}

// The first subscription to render an event keeps its result; another of
// the same operation and caller is sent it and its own value is dropped;
// another caller or another operation renders its own.
func TestPushSharesResultsOfOneOperationAndCaller(t *testing.T) {
	t.Parallel()
	admin := auth.Principal{Kind: auth.KindUser, ID: "u1", UserID: "u1", Role: tenant.RoleAdmin}
	tenant := auth.Principal{Kind: auth.KindUser, ID: "u2", UserID: "u2", Role: tenant.RoleTenantAdmin, TenantID: "t1"}
	const query = "subscription { events { cursor } }"
	tests := []struct {
		name       string
		other      context.Context
		extensions map[string]any
		wantShared bool
	}{
		{"same operation and caller", operationCtx(admin, query), nil, true},
		{"another caller", operationCtx(tenant, query), nil, false},
		{"another operation", operationCtx(admin, "subscription { events { cursor type } }"), nil, false},
		{"a result with extensions", operationCtx(admin, query), map[string]any{"x": 1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			shared := newSharedResults(sharedResultsKept)
			workers := workpool.New(0)
			event := eventstore.Cursor{TxID: 7, Position: 42}

			first := newPush(operationCtx(admin, query), workers, shared)
			first.Shares(func() { t.Error("the first subscription dropped its value") })
			x1 := &executor{data: []string{`{"events":{"cursor":"7:42"}}`}, extra: tt.extensions}
			if _, ok := first.Kept(event); ok {
				t.Fatal("a result was kept before any was made")
			}
			got := first.result(context.Background(), pushed{shared: true, event: event}, x1.responses)
			if string(got.Data) != `{"events":{"cursor":"7:42"}}` || x1.calls != 1 {
				t.Fatalf("first: %s after %d calls", got.Data, x1.calls)
			}
			copy(x1.buf, "XXXXXXXX") // the executor reuses its buffer

			second := newPush(tt.other, workers, shared)
			dropped := 0
			second.Shares(func() { dropped++ })
			kept, ok := second.Kept(event)
			if ok != tt.wantShared {
				t.Fatalf("kept result found: %v, want %v", ok, tt.wantShared)
			}
			x2 := &executor{data: []string{`{"events":{"cursor":"7:42","own":true}}`}}
			if !ok {
				got = second.result(context.Background(), pushed{shared: true, event: event}, x2.responses)
				if string(got.Data) != `{"events":{"cursor":"7:42","own":true}}` || x2.calls != 1 || dropped != 0 {
					t.Fatalf("second: %s, %d calls, %d dropped; want its own result", got.Data, x2.calls, dropped)
				}
				return
			}
			// Sent as kept: nothing is on the channel to drop.
			got = second.result(context.Background(), pushed{shared: true, data: kept}, x2.responses)
			if string(got.Data) != `{"events":{"cursor":"7:42"}}` || x2.calls != 0 || dropped != 0 {
				t.Fatalf("second: %s, %d calls, %d dropped; want the kept result, no call, nothing dropped", got.Data, x2.calls, dropped)
			}
			// Kept after its value was sent: that value is dropped.
			got = second.result(context.Background(), pushed{shared: true, event: event}, x2.responses)
			if string(got.Data) != `{"events":{"cursor":"7:42"}}` || x2.calls != 0 || dropped != 1 {
				t.Fatalf("second, sent before it was kept: %s, %d calls, %d dropped; want the kept result, no call, its value dropped", got.Data, x2.calls, dropped)
			}
		})
	}
}

// Results of a subscription that does not share (Shares not called) are
// neither kept nor looked for.
func TestPushWithoutSharesKeepsNothing(t *testing.T) {
	t.Parallel()
	p := auth.Principal{Kind: auth.KindUser, ID: "u1", Role: tenant.RoleAdmin}
	shared := newSharedResults(sharedResultsKept)
	push := newPush(operationCtx(p, "subscription { jobChanged { id } }"), workpool.New(0), shared)
	x := &executor{data: []string{`{"jobChanged":{"id":"j"}}`}}
	push.result(context.Background(), pushed{}, x.responses)
	if shared.Len() != 0 {
		t.Fatalf("%d results kept", shared.Len())
	}
	if _, ok := push.Kept(eventstore.Cursor{}); ok {
		t.Fatal("a push that does not share found a kept result")
	}
}

// writeCounter is a connection that records what each write carried.
type writeCounter struct {
	net.Conn
	mu     sync.Mutex
	writes []string
	fail   error
	closed bool
}

func (w *writeCounter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fail != nil {
		return 0, w.fail
	}
	w.writes = append(w.writes, string(p))
	return len(p), nil
}

func (w *writeCounter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	return nil
}

func (w *writeCounter) SetWriteDeadline(time.Time) error { return nil }

func TestCorkedConnectionWritesOnceWhenTheLastCorkComesOut(t *testing.T) {
	t.Parallel()
	raw := &writeCounter{}
	c := &corkConn{Conn: raw, buffers: newHeldBuffers()}
	write := func(s string) {
		t.Helper()
		if n, err := c.Write([]byte(s)); err != nil || n != len(s) {
			t.Fatalf("write %q: %d, %v", s, n, err)
		}
	}
	write("a")
	c.cork()
	write("b")
	c.cork() // a second operation of the connection
	write("c")
	c.uncork()
	write("d")
	if got := raw.got(); len(got) != 1 {
		t.Fatalf("writes while corked reached the connection: %q", got)
	}
	c.uncork()
	write("e")
	if got := raw.got(); len(got) != 3 || got[0] != "a" || got[1] != "bcd" || got[2] != "e" {
		t.Fatalf("writes: %q, want a, bcd, e", got)
	}

	// A burst past the limit is written as it goes.
	c.cork()
	big := make([]byte, corkLimit)
	write(string(big))
	if got := raw.got(); len(got) != 4 {
		t.Fatalf("%d writes after a burst past the limit, want 4", len(got))
	}
	c.uncork()

	// A write that fails closes the connection, and what follows fails.
	raw.mu.Lock()
	raw.fail = errors.New("peer gone")
	raw.mu.Unlock()
	c.cork()
	write("f")
	c.uncork()
	if _, err := c.Write([]byte("g")); err == nil {
		t.Fatal("a write after a failed one succeeded")
	}
	if !raw.isClosed() {
		t.Fatal("a failed write left the connection open")
	}
}

func (w *writeCounter) got() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.writes...)
}

func (w *writeCounter) isClosed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.closed
}

// What a held Push takes waits for Release, however the worker taking
// values interleaves with the resolver sending them, and leaves in one
// write.
func TestHeldPushWritesWhatItTookOnRelease(t *testing.T) {
	t.Parallel()
	raw := &writeCounter{}
	c := &corkConn{Conn: raw, buffers: newHeldBuffers()}
	push := newPush(context.Background(), workpool.New(0), nil)
	push.busy, push.idle = c.cork, c.uncork
	push.claimed = true
	taken := make(chan string, 3)
	n := 0
	push.arm(func(pushed) bool {
		v := string(rune('a' + n))
		n++
		_, _ = c.Write([]byte(v))
		taken <- v
		return false
	}, nil)
	push.Hold()
	for range 3 {
		push.Sent()
		<-taken // the worker took it before the next is sent
	}
	if got := raw.got(); len(got) != 0 {
		t.Fatalf("writes reached the connection while held: %q", got)
	}
	push.Release()
	// The worker may still be between its take and its end: the write
	// comes with whichever of the two lets go last.
	deadline := time.Now().Add(10 * time.Second)
	for len(raw.got()) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := raw.got(); len(got) != 1 || got[0] != "abc" {
		t.Fatalf("writes: %q, want one: abc", got)
	}
}

// A resolver held back for lack of room (Room) is woken once the
// transport took enough of what waits, not before.
func TestPushRoomWakesOnceTheTransportTookSome(t *testing.T) {
	t.Parallel()
	p := &Push{workers: workpool.New(0), claimed: true}
	for range 3 {
		p.SentKept(Kept{Data: json.RawMessage(`{}`)})
	}
	woken := make(chan struct{}, 1)
	if p.Room(3, func() { woken <- struct{}{} }) {
		t.Fatal("room with three waiting of three")
	}
	if !p.Room(4, nil) {
		t.Fatal("no room with three waiting of four")
	}
	took := make(chan struct{}, 3)
	release := make(chan struct{})
	defer close(release)
	p.arm(func(pushed) bool {
		took <- struct{}{}
		<-release
		return false
	}, nil)
	<-took
	select {
	case <-woken:
	case <-time.After(5 * time.Second):
		t.Fatal("not woken after the transport took one")
	}
}

// Shared results are kept up to their number, the oldest made going first.
func TestSharedResultsDropTheOldestMade(t *testing.T) {
	t.Parallel()
	key := func(pos int64) sharedKey { return sharedKey{event: eventstore.Cursor{TxID: 1, Position: pos}} }
	r := newSharedResults(3)
	for pos := int64(1); pos <= 3; pos++ {
		r.Add(key(pos), json.RawMessage(`{}`))
	}
	r.Get(key(1)) // a look-up does not keep a result longer
	r.Add(key(2), json.RawMessage(`{"again":true}`))
	r.Add(key(4), json.RawMessage(`{}`))
	r.Add(key(5), json.RawMessage(`{}`))
	for pos, want := range map[int64]bool{1: false, 2: false, 3: true, 4: true, 5: true} {
		if _, ok := r.Get(key(pos)); ok != want {
			t.Errorf("result of %d kept: %v, want %v", pos, ok, want)
		}
	}
	if data, _ := r.Get(key(3)); string(data) != `{}` {
		t.Errorf("result of 3: %s", data)
	}
	if r.Len() != 3 {
		t.Errorf("%d kept, want 3", r.Len())
	}
}

// A drained Push keeps the queue a paced publish filled (up to 255 events),
// for the next, and lets a longer burst's go.
func TestDrainedPushKeepsAQueueOfAPublish(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		burst int
		kept  bool
	}{{40, true}, {255, true}, {keptQueue + 1, false}} {
		p := &Push{workers: workpool.New(0), claimed: true}
		for range tt.burst {
			p.SentKept(Kept{Data: json.RawMessage(`{}`)})
		}
		drained := make(chan struct{})
		taken := 0
		p.arm(func(pushed) bool {
			if taken++; taken == tt.burst {
				close(drained)
			}
			return false
		}, nil)
		<-drained
		deadline := time.Now().Add(5 * time.Second)
		for {
			p.mu.Lock()
			running, kept := p.running, cap(p.queue) >= tt.burst
			p.mu.Unlock()
			if !running {
				if kept != tt.kept {
					t.Errorf("burst of %d: queue kept %v, want %v", tt.burst, kept, tt.kept)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("burst of %d: still taking after 5 s", tt.burst)
			}
			time.Sleep(time.Millisecond)
		}
	}
}
