package commands_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"cairn/commands"
	"cairn/domain"
	"cairn/domain/events"
	"cairn/domain/node"
	"cairn/eventstore"
	"cairn/internal/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

func newStore(t *testing.T) *eventstore.Store {
	t.Helper()
	db := testdb.New(t)
	s := eventstore.New(db.AppPool(t), events.Registry(), eventstore.Options{})
	t.Cleanup(s.Close)
	return s
}

var at = time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)

func enroll(ctx context.Context, s commands.Store, meta commands.Meta, id string) (commands.Result, error) {
	input := struct{ NodeID, Hostname string }{id, "host-" + id}
	return commands.Execute[node.Node](ctx, s, domain.NodeStream, id, meta, input, func(n node.Node) ([]domain.Event, error) {
		return n.Enroll(node.Enroll{NodeID: id, Hostname: input.Hostname, Labels: map[string]string{"rack": "a"}, At: at})
	})
}

func TestExecuteDecidesAndAppends(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	res, err := enroll(ctx, s, commands.Meta{Actor: "op-1", CorrelationID: "c-1"}, "n1")
	if err != nil || res.Version != 1 || res.Cursor.IsZero() {
		t.Fatalf("enroll: %+v %v", res, err)
	}
	n, v, err := commands.Load[node.Node](ctx, s, domain.NodeStream, "n1")
	if err != nil || v != 1 || n.Status != node.StatusEnrolled || n.Labels["rack"] != "a" {
		t.Fatalf("loaded %+v v%d %v", n, v, err)
	}
	evs, _ := s.ReadStream(ctx, "node-n1", eventstore.ReadStreamOptions{})
	if evs[0].Metadata.Actor != "op-1" || evs[0].Metadata.CorrelationID != "c-1" {
		t.Fatalf("metadata not recorded: %+v", evs[0].Metadata)
	}
	// The domain's refusal comes back typed, and nothing is appended.
	_, err = enroll(ctx, s, commands.Meta{}, "n1")
	var se *domain.StateError
	if !errors.As(err, &se) || !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("second enroll: want StateError, got %v", err)
	}
	if v, _ := s.StreamVersion(ctx, "node-n1"); v != 1 {
		t.Fatalf("refused command appended: version %d", v)
	}
}

func TestExecuteIsIdempotentByCommandID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	meta := commands.Meta{CommandID: "enroll-n2-once"}
	first, err := enroll(ctx, s, meta, "n2")
	if err != nil {
		t.Fatal(err)
	}
	// A retry would be refused by the domain (already enrolled) if it were
	// decided again; with its command id it returns the first result.
	again, err := enroll(ctx, s, meta, "n2")
	if err != nil || !again.Duplicate || again.Cursor != first.Cursor || again.Version != 1 {
		t.Fatalf("retry: %+v %v (first %+v)", again, err, first)
	}
	// The same id for another command is refused.
	if _, err := enroll(ctx, s, meta, "n3"); !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("reused id: want conflict, got %v", err)
	}
}

// A retry decided on a state that changed since its first run may append
// again; the log refuses its command id, and the retry gets the first
// run's result without a second change.
func TestExecuteRetryThatWouldAppendAgainIsADuplicate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	if _, err := enroll(ctx, s, commands.Meta{}, "n-labels"); err != nil {
		t.Fatal(err)
	}
	label := func(meta commands.Meta, rack string) (commands.Result, error) {
		input := struct{ NodeID, Rack string }{"n-labels", rack}
		return commands.Execute[node.Node](ctx, s, domain.NodeStream, "n-labels", meta, input, func(n node.Node) ([]domain.Event, error) {
			return n.SetLabels(node.SetLabels{NodeID: "n-labels", Labels: map[string]string{"rack": rack}, At: at})
		})
	}
	first, err := label(commands.Meta{CommandID: "rack-b"}, "b")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := label(commands.Meta{}, "c"); err != nil {
		t.Fatal(err)
	}
	again, err := label(commands.Meta{CommandID: "rack-b"}, "b")
	if err != nil || !again.Duplicate || again.Cursor != first.Cursor {
		t.Fatalf("retry: %+v %v (first %+v)", again, err, first)
	}
	n, v, err := commands.Load[node.Node](ctx, s, domain.NodeStream, "n-labels")
	if err != nil || v != 3 || n.Labels["rack"] != "c" {
		t.Fatalf("after the retry: rack %q at version %d (%v); want rack c at version 3", n.Labels["rack"], v, err)
	}
}

// A hundred retries of one command id racing each other (a client retrying
// after timeouts, perhaps through several replicas) all get the first run's
// result: one run appends, the others are duplicates, none a conflict.
func TestExecuteRacingRetriesOfOneCommandID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	if _, err := enroll(ctx, s, commands.Meta{}, "n-race"); err != nil {
		t.Fatal(err)
	}
	const racers = 100
	results := make([]commands.Result, racers)
	errs := make([]error, racers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			input := struct{ NodeID, Reason string }{"n-race", "maintenance"}
			results[i], errs[i] = commands.Execute[node.Node](ctx, s, domain.NodeStream, "n-race", commands.Meta{CommandID: "drain-n-race"}, input,
				func(n node.Node) ([]domain.Event, error) {
					return n.Drain(node.Drain{NodeID: "n-race", Reason: input.Reason, At: at})
				})
		}()
	}
	close(start)
	wg.Wait()
	firsts := 0
	for i := range racers {
		if errs[i] != nil {
			t.Fatalf("retry %d: %v", i, errs[i])
		}
		if !results[i].Duplicate {
			firsts++
		}
		if results[i].Cursor != results[0].Cursor {
			t.Fatalf("retry %d got cursor %v, retry 0 %v", i, results[i].Cursor, results[0].Cursor)
		}
	}
	if v, _ := s.StreamVersion(ctx, "node-n-race"); firsts != 1 || v != 2 {
		t.Fatalf("%d runs were not duplicates, stream version %d: want one run, version 2", firsts, v)
	}
}

func TestExecuteRedecidesAfterConcurrentChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	if _, err := enroll(ctx, s, commands.Meta{}, "n4"); err != nil {
		t.Fatal(err)
	}
	// Eight concurrent label changes: each must land (re-decided on conflict).
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			labels := map[string]string{"writer": string(rune('a' + i))}
			_, err := commands.Execute[node.Node](ctx, s, domain.NodeStream, "n4", commands.Meta{}, labels, func(n node.Node) ([]domain.Event, error) {
				return n.SetLabels(node.SetLabels{NodeID: "n4", Labels: labels, At: at})
			})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if err != nil {
			if !errors.Is(err, domain.ErrConflict) {
				t.Fatal(err)
			}
			failed++
		}
	}
	v, _ := s.StreamVersion(ctx, "node-n4")
	if int(v) != 1+8-failed || failed > 4 {
		t.Fatalf("version %d after 8 label changes with %d conflicts", v, failed)
	}
}

// An entity stays in the tenant it was made in: commands by callers of no
// tenant (operators, agents, the system) are tagged with it, so the tenant
// sees its whole history; a caller's own tenant is kept.
func TestExecuteTagsEventsWithTheStreamsTenant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	if _, err := enroll(ctx, s, commands.Meta{Actor: "u-1", Tenant: "acme"}, "n9"); err != nil {
		t.Fatal(err)
	}
	relabel := func(meta commands.Meta, labels map[string]string) {
		t.Helper()
		_, err := commands.Execute[node.Node](ctx, s, domain.NodeStream, "n9", meta, labels, func(n node.Node) ([]domain.Event, error) {
			return n.SetLabels(node.SetLabels{NodeID: "n9", Labels: labels, At: at})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	relabel(commands.Meta{Actor: "operator"}, map[string]string{"rack": "b"})
	relabel(commands.Meta{Actor: "other", Tenant: "globex"}, map[string]string{"rack": "c"})
	if _, err := enroll(ctx, s, commands.Meta{Actor: "operator"}, "n10"); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		stream string
		want   []string
	}{
		{"node-n9", []string{"acme", "acme", "globex"}},
		{"node-n10", []string{""}},
	}
	for _, tt := range tests {
		evs, err := s.ReadStream(ctx, tt.stream, eventstore.ReadStreamOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range evs {
			got = append(got, e.Metadata.Tenant)
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%s: tenants %q, want %q", tt.stream, got, tt.want)
		}
	}
}

// A stream named by an id EntityID just generated is decided on as empty,
// without reading it; should the generator repeat an id in use, the log's
// refusal makes Execute read the stream after all and answer as it would
// have.
func TestExecuteDecidesOnAGeneratedIDsStreamWithoutReadingIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := &countingStore{Store: newStore(t)}
	cases := []struct {
		name      string
		generated string
		wantReads int64
		wantErr   bool
	}{
		{"a new id", "n-new", 0, false},
		{"an id in use", "n-new", 1, true},
	}
	for _, c := range cases {
		meta := commands.Meta{}
		id, err := commands.EntityID(ctx, store, &meta, domain.NodeStream, "", func() string { return c.generated })
		if err != nil {
			t.Fatal(err)
		}
		before := store.reads.Load()
		_, err = enroll(ctx, store, meta, id)
		var se *domain.StateError
		if c.wantErr != errors.As(err, &se) {
			t.Fatalf("%s: enroll: %v", c.name, err)
		}
		if got := store.reads.Load() - before; got != c.wantReads {
			t.Errorf("%s: %d stream reads, want %d", c.name, got, c.wantReads)
		}
	}
	if v, _ := store.StreamVersion(ctx, "node-n-new"); v != 1 {
		t.Fatalf("version %d, want 1", v)
	}
	// A caller's own id is checked against the log as ever.
	meta := commands.Meta{}
	id, err := commands.EntityID(ctx, store, &meta, domain.NodeStream, "n-given", nil)
	if err != nil {
		t.Fatal(err)
	}
	before := store.reads.Load()
	if _, err := enroll(ctx, store, meta, id); err != nil {
		t.Fatal(err)
	}
	if store.reads.Load() == before {
		t.Error("a caller-given id's stream was not read")
	}
}
