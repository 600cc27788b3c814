package graph_test

import (
	"context"
	"sync/atomic"
	"testing"

	"cairn/eventstore"
	"cairn/graph"
)

// streamReads counts the streams the API reads.
type streamReads struct {
	*eventstore.Store
	n *atomic.Int64
}

func (s streamReads) ReadStream(ctx context.Context, id string, o eventstore.ReadStreamOptions) ([]eventstore.RecordedEvent, error) {
	s.n.Add(1)
	return s.Store.ReadStream(ctx, id, o)
}

// A mutation's payload reads the entity back only when the request selects
// it: a flood of creations that asks for cursors reads nothing.
func TestPayloadReadsTheEntityOnlyWhenSelected(t *testing.T) {
	t.Parallel()
	var reads atomic.Int64
	e := newEnvWith(t, graph.Config{}, func(s *eventstore.Store) graph.EventLog { return streamReads{s, &reads} })
	admin := e.client("admin")
	cases := []struct {
		name      string
		selection string
		reads     int64
	}{
		{"cursor only", `cursor duplicate`, 0},
		{"the tenant", `cursor tenant { name }`, 1},
		{"the tenant in a fragment", `... on TenantPayload { tenant { name } }`, 1},
	}
	for _, c := range cases {
		before := reads.Load()
		var out struct {
			CreateTenant struct {
				Cursor string
				Tenant *struct{ Name string }
			}
		}
		e.must(admin, `mutation($n: String!) { createTenant(input: {name: $n}) { `+c.selection+` } }`, map[string]any{"n": c.name}, &out)
		if got := reads.Load() - before; got != c.reads {
			t.Errorf("%s: %d stream reads by the API, want %d", c.name, got, c.reads)
		}
		if (out.CreateTenant.Tenant != nil) != (c.reads > 0) {
			t.Errorf("%s: tenant %+v", c.name, out.CreateTenant.Tenant)
		} else if c.reads > 0 && out.CreateTenant.Tenant.Name != c.name {
			t.Errorf("%s: tenant named %q", c.name, out.CreateTenant.Tenant.Name)
		}
	}
}
