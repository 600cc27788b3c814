package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"cairn/commands"
	"cairn/domain"
	"cairn/domain/job"
	"cairn/domain/node"
	"cairn/domain/resource"
	"cairn/domain/service"
	"cairn/domain/template"
	"cairn/domain/tenant"
	"cairn/eventstore"
)

// State is an entity as it was at a moment, folded from its own stream.
type State[S any] struct {
	Entity S
	// Exists is false when the entity had no events yet at that moment.
	Exists bool
	// Version of the stream reached, Cursor and At of its last event.
	Version int64
	Cursor  eventstore.Cursor
	At      time.Time
	// Events are the stream's events up to the moment, oldest first.
	Events []eventstore.RecordedEvent
}

// AsOf folds one entity's stream up to a moment. A stream that never
// existed is a *domain.NotFoundError; one that did not exist yet at that
// moment is a State with Exists false.
func AsOf[S any, PS interface {
	*S
	commands.Aggregate
}](ctx context.Context, store Log, streamType, id string, at Point) (State[S], error) {
	var out State[S]
	if err := check(ctx, store, at); err != nil {
		return out, err
	}
	stream := domain.StreamID(streamType, id)
	if at.Start {
		if _, err := store.ReadStream(ctx, stream, eventstore.ReadStreamOptions{AsOfVersion: 1}); err != nil {
			return out, notFound(err, streamType, id)
		}
		return out, nil
	}
	evs, err := store.ReadStream(ctx, stream, eventstore.ReadStreamOptions{AsOf: at.Cursor, AsOfTime: at.Time})
	var nf *eventstore.StreamNotFoundError
	if errors.As(err, &nf) {
		// Did it exist later?
		if _, err := store.ReadStream(ctx, stream, eventstore.ReadStreamOptions{AsOfVersion: 1}); err != nil {
			return out, notFound(err, streamType, id)
		}
		return out, nil
	}
	if err != nil {
		return out, err
	}
	for _, rec := range evs {
		ev, err := store.Decode(rec)
		if err != nil {
			return out, fmt.Errorf("%s %q as of %s: event at position %d: %w", streamType, id, at, rec.Position, err)
		}
		PS(&out.Entity).Apply(ev)
	}
	last := evs[len(evs)-1]
	out.Exists, out.Version, out.Cursor, out.At, out.Events = true, last.Version, last.Cursor(), last.RecordedAt, evs
	return out, nil
}

func notFound(err error, streamType, id string) error {
	var nf *eventstore.StreamNotFoundError
	if errors.As(err, &nf) {
		return &domain.NotFoundError{Entity: strings.ReplaceAll(streamType, "_", " "), ID: id}
	}
	return err
}

// NodeAsOf is a node as it was at a moment.
func NodeAsOf(ctx context.Context, store Log, id string, at Point) (State[node.Node], error) {
	return AsOf[node.Node](ctx, store, domain.NodeStream, id, at)
}

// JobAsOf is a job as it was at a moment.
func JobAsOf(ctx context.Context, store Log, id string, at Point) (State[job.Job], error) {
	return AsOf[job.Job](ctx, store, domain.JobStream, id, at)
}

// ServiceAsOf is a service as it was at a moment.
func ServiceAsOf(ctx context.Context, store Log, id string, at Point) (State[service.Service], error) {
	return AsOf[service.Service](ctx, store, domain.ServiceStream, id, at)
}

// ResourceAsOf is a resource as it was at a moment.
func ResourceAsOf(ctx context.Context, store Log, id string, at Point) (State[resource.Resource], error) {
	return AsOf[resource.Resource](ctx, store, domain.ResourceStream, id, at)
}

// TemplateAsOf is a template version ("name@version") as it was at a moment.
func TemplateAsOf(ctx context.Context, store Log, id string, at Point) (State[template.TemplateVersion], error) {
	return AsOf[template.TemplateVersion](ctx, store, domain.TemplateStream, id, at)
}

// TenantAsOf is a tenant as it was at a moment.
func TenantAsOf(ctx context.Context, store Log, id string, at Point) (State[tenant.Tenant], error) {
	return AsOf[tenant.Tenant](ctx, store, domain.TenantStream, id, at)
}

// Change is one field that differs between two states. Path is dotted
// (Labels.zone, Facts.CPU.Cores); Before or After is nil where the field
// was absent.
type Change struct {
	Path   string
	Before any
	After  any
}

// Diff is what changed in an entity between two moments.
type Diff[S any] struct {
	From, To State[S]
	Changes  []Change
	// Events are those after From up to To, oldest first.
	Events []eventstore.RecordedEvent
}

// secretFields are never shown in a diff: an API token's secret hash.
var secretFields = map[string]bool{"SecretHash": true}

// DiffOf compares an entity at two moments (in either order: the earlier
// becomes From).
func DiffOf[S any, PS interface {
	*S
	commands.Aggregate
}](ctx context.Context, store Log, streamType, id string, from, to Point) (Diff[S], error) {
	var out Diff[S]
	a, err := AsOf[S, PS](ctx, store, streamType, id, from)
	if err != nil {
		return out, err
	}
	b, err := AsOf[S, PS](ctx, store, streamType, id, to)
	if err != nil {
		return out, err
	}
	if b.Version < a.Version {
		a, b = b, a
	}
	out.From, out.To = a, b
	out.Events = b.Events[min(len(a.Events), len(b.Events)):]
	before, err := flatten(a.Entity, a.Exists)
	if err != nil {
		return out, err
	}
	after, err := flatten(b.Entity, b.Exists)
	if err != nil {
		return out, err
	}
	paths := map[string]bool{}
	for p := range before {
		paths[p] = true
	}
	for p := range after {
		paths[p] = true
	}
	for p := range paths {
		x, inA := before[p]
		y, inB := after[p]
		if inA && inB && reflect.DeepEqual(x, y) {
			continue
		}
		out.Changes = append(out.Changes, Change{Path: p, Before: x, After: y})
	}
	sort.Slice(out.Changes, func(i, j int) bool { return out.Changes[i].Path < out.Changes[j].Path })
	return out, nil
}

// flatten turns a state into dotted paths and leaf values through its JSON
// form; lists are leaves, compared whole.
func flatten(v any, exists bool) (map[string]any, error) {
	out := map[string]any{}
	if !exists {
		return out, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var tree any
	if err := json.Unmarshal(b, &tree); err != nil {
		return nil, err
	}
	var walk func(prefix string, x any)
	walk = func(prefix string, x any) {
		m, ok := x.(map[string]any)
		if !ok || len(m) == 0 {
			if prefix != "" {
				out[prefix] = x
			}
			return
		}
		for k, child := range m {
			if secretFields[k] {
				continue
			}
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			walk(p, child)
		}
	}
	walk("", tree)
	return out, nil
}
