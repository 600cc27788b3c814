package graph

import (
	"context"
	"encoding/hex"
	"errors"

	"cairn/eventstore"
	"cairn/graph/live"
	"cairn/graph/model"
	"cairn/graph/transport"
	"cairn/internal/ptr"
)

// toEvent renders a recorded event for the API, its payload upcast to the
// current schema version.
func (r *Resolver) toEvent(e *eventstore.RecordedEvent) (*model.Event, error) {
	payload, err := r.deps.Store.Registry().Upcast(e.Type, e.SchemaVersion, e.Payload)
	if err != nil {
		// An event this build does not know: show it as stored.
		payload = e.Payload
	}
	m := e.Metadata
	return &model.Event{
		Cursor:        model.Cursor(e.Cursor()),
		Position:      e.Position,
		StreamID:      e.StreamID,
		StreamType:    e.StreamType,
		Version:       int(e.Version),
		Type:          e.Type,
		SchemaVersion: e.SchemaVersion,
		Payload:       model.JSON(payload),
		Metadata: &model.EventMetadata{
			CommandID:     optional(e.CommandID),
			CorrelationID: optional(m.CorrelationID),
			CausationID:   optional(m.CausationID),
			Actor:         optional(m.Actor),
			TenantID:      optional(m.Tenant),
		},
		Time:     e.RecordedAt,
		PrevHash: hex.EncodeToString(e.PrevHash),
		Hash:     hex.EncodeToString(e.Hash),
	}, nil
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// visibleFilter turns the API's filter into the history's, narrowed to what
// the caller may see: a tenant role sees its own tenant's events only.
func visibleFilter(p Principal, f *model.EventFilter) eventstore.Filter {
	var out eventstore.Filter
	if f != nil {
		out = eventstore.Filter{
			StreamIDs: f.StreamIds, StreamTypes: f.StreamTypes, EventTypes: f.Types,
			Actor: ptr.Value(f.Actor), CorrelationID: ptr.Value(f.CorrelationID), Tenant: ptr.Value(f.TenantID),
		}
		if f.Time != nil {
			if f.Time.From != nil {
				out.From = *f.Time.From
			}
			if f.Time.To != nil {
				out.To = *f.Time.To
			}
		}
	}
	if tenantScoped(p) {
		out.Tenant = p.TenantID
	}
	return out
}

// eventPage reads one page of the history as a connection.
func (r *Resolver) eventPage(ctx context.Context, first *int, after *model.Cursor, f eventstore.Filter) (*model.EventConnection, error) {
	n, err := pageSize(first, 100)
	if err != nil {
		return nil, err
	}
	var from eventstore.Cursor
	if after != nil {
		from = eventstore.Cursor(*after)
	}
	// Like every read of the log in global order, a page only holds events
	// no running transaction can still precede, so a page boundary never
	// skips a late commit.
	evs, err := r.deps.Store.ReadAll(ctx, from, n+1, f)
	if err != nil {
		return nil, err
	}
	conn := &model.EventConnection{Edges: []model.EventEdge{}, PageInfo: &model.PageInfo{HasPreviousPage: !from.IsZero()}}
	if len(evs) > n {
		evs = evs[:n]
		conn.PageInfo.HasNextPage = true
	}
	for i := range evs {
		ev, err := r.toEvent(&evs[i])
		if err != nil {
			return nil, err
		}
		conn.Edges = append(conn.Edges, model.EventEdge{Cursor: evs[i].Cursor().String(), Node: ev})
	}
	if len(evs) > 0 {
		start, end := evs[0].Cursor().String(), evs[len(evs)-1].Cursor().String()
		conn.PageInfo.StartCursor, conn.PageInfo.EndCursor = &start, &end
	}
	return conn, nil
}

// subscribe runs one subscription over a hub: events after `after` (from
// now when nil) that match, each turned into a result by render (which may
// skip an event by returning nil). It ends, with the reason delivered to the
// client, when the subscriber falls behind, the session's token stops
// working, or the server stops.
func subscribe[T any](ctx context.Context, hub *live.Hub, after *model.Cursor, match live.Match,
	render func(context.Context, live.Event) (*T, error)) (<-chan *T, error) {
	var from *eventstore.Cursor
	if after != nil {
		c := eventstore.Cursor(*after)
		from = &c
	}
	sub, err := hub.Subscribe(ctx, from, match)
	if err != nil {
		return nil, err
	}
	out := make(chan *T)
	sess := transport.SessionOf(ctx)
	go func() {
		defer close(out)
		defer sub.Close()
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		if sess != nil {
			go func() {
				select {
				case <-sess.Ended():
					cancel()
				case <-ctx.Done():
				}
			}()
		}
		for {
			e, err := sub.Next(ctx)
			if err != nil {
				if sess != nil && sess.Err() != nil {
					transport.EndWith(ctx, sess.Err())
				} else if !errors.Is(err, context.Canceled) {
					transport.EndWith(ctx, err)
				}
				return
			}
			v, err := render(ctx, e)
			if err != nil {
				switch {
				case sess != nil && sess.Err() != nil:
					transport.EndWith(ctx, sess.Err())
				case ctx.Err() == nil:
					transport.EndWith(ctx, err)
				}
				// Otherwise the subscriber went away: nobody to tell.
				return
			}
			if v == nil {
				continue
			}
			select {
			case out <- v:
			case <-ctx.Done():
				if sess != nil && sess.Err() != nil {
					transport.EndWith(ctx, sess.Err())
				}
				return
			}
		}
	}()
	return out, nil
}
