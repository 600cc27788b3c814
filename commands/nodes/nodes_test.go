package nodes_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"cairn/commands"
	"cairn/commands/commandstest"
	"cairn/commands/nodes"
	"cairn/domain"
	"cairn/domain/jointoken"
	"cairn/domain/node"
	"cairn/domain/tenant"
	"cairn/eventstore"
	"cairn/internal/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

var t0 = time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)

type fixture struct {
	s      *eventstore.Store
	h      *nodes.Handlers
	prefix string // of every id this fixture seeded
}

// id names an entity of this fixture: cases share a database (making one
// per case would be slow) and keep apart by their ids.
func (f fixture) id(name string) string { return f.prefix + name }

func newFixture(t *testing.T) fixture {
	t.Helper()
	s := commandstest.NewStore(t)
	clock := commandstest.NewClock(t0)
	return fixture{s: s, h: nodes.NewHandlers(s, clock.Now, commandstest.IDs("node"))}
}

// seed gives a case an active location loc-1, a retired location loc-old
// and an enrolled node n1 holding an agent credential, named with prefix.
func seed(t *testing.T, f fixture, prefix string) fixture {
	t.Helper()
	ctx := context.Background()
	s := f.s
	f.prefix = prefix
	for _, id := range []string{f.id("loc-1"), f.id("loc-old")} {
		must[commands.Result](t)(commands.Execute[tenant.Location](ctx, s, domain.LocationStream, id, commands.Meta{}, id, func(l tenant.Location) ([]domain.Event, error) {
			es, err := l.Create(tenant.CreateLocation{LocationID: id, Name: id, At: t0})
			if id == f.id("loc-old") {
				es = append(es, tenant.LocationRetired{LocationID: id, At: t0})
			}
			return es, err
		}))
	}
	must[commands.Outcome](t)(f.h.Enroll(ctx, commands.Meta{}, nodes.Enroll{NodeID: f.id("n1"), Hostname: "n1.example.org"}))
	must[commands.Result](t)(commands.Execute[jointoken.Credential](ctx, s, domain.NodeCredentialStream, f.id("n1"), commands.Meta{}, "cred", func(c jointoken.Credential) ([]domain.Event, error) {
		return c.Issue(jointoken.IssueCredential{NodeID: f.id("n1"), SecretHash: strings.Repeat("ab", 32), At: t0})
	}))
	return f
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

type call func(f fixture, meta commands.Meta) (commands.Outcome, error)

func TestHandlers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	connect := func(f fixture) {
		must[commands.Outcome](t)(f.h.Connect(ctx, commands.Meta{}, nodes.Connect{NodeID: f.id("n1")}))
	}
	cases := []struct {
		name  string
		prep  func(f fixture)
		run   call
		want  error  // nil, domain.ErrNotFound, ErrConflict or ErrInvalid
		event string // the event a successful command records last
	}{
		{"enroll", nil, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Enroll(ctx, m, nodes.Enroll{NodeID: f.id("n2"), Hostname: "n2", LocationID: f.id("loc-1"), Labels: map[string]string{"zone": "a"}})
		}, nil, "node.enrolled"},
		{"enroll with a server-chosen id", nil, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Enroll(ctx, m, nodes.Enroll{Hostname: "n3"})
		}, nil, "node.enrolled"},
		{"enroll in an unknown location", nil, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Enroll(ctx, m, nodes.Enroll{NodeID: f.id("n2"), Hostname: "n2", LocationID: f.id("loc-x")})
		}, domain.ErrNotFound, ""},
		{"enroll in a retired location", nil, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Enroll(ctx, m, nodes.Enroll{NodeID: f.id("n2"), Hostname: "n2", LocationID: f.id("loc-old")})
		}, domain.ErrConflict, ""},
		{"enroll an enrolled node", nil, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Enroll(ctx, m, nodes.Enroll{NodeID: f.id("n1"), Hostname: "n1"})
		}, domain.ErrConflict, ""},
		{"enroll a bad host name", nil, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Enroll(ctx, m, nodes.Enroll{NodeID: f.id("n2"), Hostname: "no_such host"})
		}, domain.ErrInvalid, ""},
		{"set labels", nil, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.SetLabels(ctx, m, nodes.SetLabels{NodeID: f.id("n1"), Labels: map[string]string{"role": "db"}})
		}, nil, "node.labels_set"},
		{"set bad labels", nil, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.SetLabels(ctx, m, nodes.SetLabels{NodeID: f.id("n1"), Labels: map[string]string{"Role": "db"}})
		}, domain.ErrInvalid, ""},
		{"set labels of an unknown node", nil, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.SetLabels(ctx, m, nodes.SetLabels{NodeID: f.id("nx"), Labels: map[string]string{"role": "db"}})
		}, domain.ErrNotFound, ""},
		{"no node id", nil, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Drain(ctx, m, nodes.Drain{})
		}, domain.ErrInvalid, ""},
		{"set location", nil, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.SetLocation(ctx, m, nodes.SetLocation{NodeID: f.id("n1"), LocationID: f.id("loc-1")})
		}, nil, "node.location_set"},
		{"set an unknown location", nil, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.SetLocation(ctx, m, nodes.SetLocation{NodeID: f.id("n1"), LocationID: f.id("loc-x")})
		}, domain.ErrNotFound, ""},
		{"set a retired location", nil, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.SetLocation(ctx, m, nodes.SetLocation{NodeID: f.id("n1"), LocationID: f.id("loc-old")})
		}, domain.ErrConflict, ""},
		{"drain", nil, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Drain(ctx, m, nodes.Drain{NodeID: f.id("n1"), Reason: "maintenance"})
		}, nil, "node.drain_requested"},
		{"undrain", func(f fixture) {
			must[commands.Outcome](t)(f.h.Drain(ctx, commands.Meta{}, nodes.Drain{NodeID: f.id("n1")}))
		}, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Undrain(ctx, m, nodes.Undrain{NodeID: f.id("n1")})
		}, nil, "node.undrained"},
		{"decommission", nil, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Decommission(ctx, m, nodes.Decommission{NodeID: f.id("n1"), Reason: "broken"})
		}, nil, "node.decommissioned"},
		{"decommission twice", func(f fixture) {
			must[commands.Outcome](t)(f.h.Decommission(ctx, commands.Meta{}, nodes.Decommission{NodeID: f.id("n1")}))
		}, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Decommission(ctx, m, nodes.Decommission{NodeID: f.id("n1")})
		}, domain.ErrConflict, ""},
		{"decommission an unknown node", nil, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Decommission(ctx, m, nodes.Decommission{NodeID: f.id("nx")})
		}, domain.ErrNotFound, ""},
		{"connect", nil, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Connect(ctx, m, nodes.Connect{NodeID: f.id("n1")})
		}, nil, "node.connected"},
		{"connect a decommissioned node", func(f fixture) {
			must[commands.Outcome](t)(f.h.Decommission(ctx, commands.Meta{}, nodes.Decommission{NodeID: f.id("n1")}))
		}, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Connect(ctx, m, nodes.Connect{NodeID: f.id("n1")})
		}, domain.ErrConflict, ""},
		{"disconnect", connect, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Disconnect(ctx, m, nodes.Disconnect{NodeID: f.id("n1")})
		}, nil, "node.disconnected"},
		{"disconnect a node never connected", nil, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.Disconnect(ctx, m, nodes.Disconnect{NodeID: f.id("n1")})
		}, domain.ErrConflict, ""},
		{"mark down", func(f fixture) {
			connect(f)
			must[commands.Outcome](t)(f.h.Disconnect(ctx, commands.Meta{}, nodes.Disconnect{NodeID: f.id("n1")}))
		}, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.MarkDown(ctx, m, nodes.MarkDown{NodeID: f.id("n1")})
		}, nil, "node.went_down"},
		{"mark an online node down", connect, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.MarkDown(ctx, m, nodes.MarkDown{NodeID: f.id("n1")})
		}, domain.ErrConflict, ""},
		{"report facts", connect, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.ReportFacts(ctx, m, nodes.ReportFacts{NodeID: f.id("n1"), Facts: node.Facts{CPU: node.CPU{Model: "x", Cores: 4, Threads: 8}, MemoryBytes: 1 << 30}})
		}, nil, "node.facts_reported"},
		{"report bad facts", connect, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.ReportFacts(ctx, m, nodes.ReportFacts{NodeID: f.id("n1"), Facts: node.Facts{CPU: node.CPU{Cores: -1}}})
		}, domain.ErrInvalid, ""},
		{"mark drained", func(f fixture) {
			connect(f)
			must[commands.Outcome](t)(f.h.Drain(ctx, commands.Meta{}, nodes.Drain{NodeID: f.id("n1")}))
		}, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.MarkDrained(ctx, m, nodes.MarkDrained{NodeID: f.id("n1")})
		}, nil, "node.drained"},
		{"mark a node drained that is not draining", connect, func(f fixture, m commands.Meta) (commands.Outcome, error) {
			return f.h.MarkDrained(ctx, m, nodes.MarkDrained{NodeID: f.id("n1")})
		}, domain.ErrConflict, ""},
	}
	shared := newFixture(t)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := seed(t, shared, fmt.Sprintf("c%d.", i))
			if c.prep != nil {
				c.prep(f)
			}
			corr := "corr-" + c.name
			meta := commands.Meta{CommandID: "cmd-" + c.name, Actor: "user:op", CorrelationID: corr}
			out, err := c.run(f, meta)
			if c.want != nil {
				if !errors.Is(err, c.want) {
					t.Fatalf("want %v, got %v", c.want, err)
				}
				if n := commandstest.CountCorrelated(t, f.s, corr); n != 0 {
					t.Fatalf("a refused command appended %d events", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			evs := commandstest.Stream(t, f.s, domain.StreamID(domain.NodeStream, out.ID))
			// The cursor is the command's last event, which may be in another stream.
			last := evs[len(evs)-1]
			if last.Type != c.event || last.Metadata.Actor != "user:op" || last.Metadata.CorrelationID != corr ||
				out.Version != last.Version || out.Cursor.Less(last.Cursor()) || out.Duplicate {
				t.Fatalf("outcome %+v, last event %s v%d by %q", out, last.Type, last.Version, last.Metadata.Actor)
			}
			// A retry with the same command id returns the first outcome and
			// appends nothing.
			n := commandstest.CountCorrelated(t, f.s, corr)
			again, err := c.run(f, meta)
			if err != nil || !again.Duplicate || again.Cursor != out.Cursor || again.ID != out.ID || again.Version != out.Version {
				t.Fatalf("retry: %+v %v (first %+v)", again, err, out)
			}
			if commandstest.CountCorrelated(t, f.s, corr) != n {
				t.Fatal("a retry appended events")
			}
		})
	}
}

// Decommissioning a node revokes its agent's credential in the same append.
func TestDecommissionRevokesCredential(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := seed(t, newFixture(t), "")
	out, err := f.h.Decommission(ctx, commands.Meta{Actor: "user:op"}, nodes.Decommission{NodeID: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	cred, _, err := commands.Load[jointoken.Credential](ctx, f.s, domain.NodeCredentialStream, "n1")
	if err != nil || cred.Status != jointoken.CredentialStatusRevoked {
		t.Fatalf("credential %+v %v", cred, err)
	}
	evs := commandstest.Stream(t, f.s, "node_credential-n1")
	if last := evs[len(evs)-1]; last.TxID != out.Cursor.TxID || last.Metadata.Actor != "user:op" {
		t.Fatalf("revocation not in the decommission's transaction: %+v vs %+v", last.Cursor(), out.Cursor)
	}
	// A node enrolled by hand has no credential: decommissioning it still works.
	must[commands.Outcome](t)(f.h.Enroll(ctx, commands.Meta{}, nodes.Enroll{NodeID: "n9", Hostname: "n9"}))
	if _, err := f.h.Decommission(ctx, commands.Meta{}, nodes.Decommission{NodeID: "n9"}); err != nil {
		t.Fatal(err)
	}
}

// A heartbeat on a connected node records nothing and reports no cursor.
func TestHeartbeatRecordsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := seed(t, newFixture(t), "")
	first := must[commands.Outcome](t)(f.h.Connect(ctx, commands.Meta{}, nodes.Connect{NodeID: "n1"}))
	beat := must[commands.Outcome](t)(f.h.Connect(ctx, commands.Meta{}, nodes.Connect{NodeID: "n1"}))
	if !beat.Cursor.IsZero() || beat.Version != first.Version {
		t.Fatalf("heartbeat: %+v after %+v", beat, first)
	}
}
