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
	"unicode"

	"cairn/commands"
	"cairn/domain"
	"cairn/domain/job"
	"cairn/domain/node"
	"cairn/domain/resource"
	"cairn/domain/service"
	"cairn/domain/template"
	"cairn/domain/tenant"
	"cairn/eventstore"
	"cairn/projections"
)

// Entities as of a past moment are computed by replaying their own stream
// up to it: the read models only know the present. This is the auditor's
// view of one entity, one stream per request, never a replay of the whole
// log (Replay does that). The API's entityAsOf and entityDiff are served
// from here.

// Kind is an entity type whose past can be replayed: its stream type, the
// name people call it by, and a fresh aggregate to fold its events into.
type Kind struct {
	Stream string
	Name   string
	fresh  func() commands.Aggregate
}

// The kinds of entity the log holds.
var (
	NodeKind     = Kind{domain.NodeStream, "node", func() commands.Aggregate { return &node.Node{} }}
	JobKind      = Kind{domain.JobStream, "job", func() commands.Aggregate { return &job.Job{} }}
	TemplateKind = Kind{domain.TemplateStream, "template", func() commands.Aggregate { return &template.TemplateVersion{} }}
	ServiceKind  = Kind{domain.ServiceStream, "service", func() commands.Aggregate { return &service.Service{} }}
	ResourceKind = Kind{domain.ResourceStream, "resource", func() commands.Aggregate { return &resource.Resource{} }}
	TenantKind   = Kind{domain.TenantStream, "tenant", func() commands.Aggregate { return &tenant.Tenant{} }}
	UserKind     = Kind{domain.UserStream, "user", func() commands.Aggregate { return &tenant.User{} }}
	TokenKind    = Kind{domain.TokenStream, "api token", func() commands.Aggregate { return &tenant.APIToken{} }}
	LocationKind = Kind{domain.LocationStream, "location", func() commands.Aggregate { return &tenant.Location{} }}
)

// Streams is the event log as AsOf reads it: one stream at a time, and
// whether a cursor names one of its events. *eventstore.Store implements it.
type Streams interface {
	ReadStream(ctx context.Context, streamID string, o eventstore.ReadStreamOptions) ([]eventstore.RecordedEvent, error)
	Decode(e eventstore.RecordedEvent) (domain.Event, error)
	Contains(ctx context.Context, c eventstore.Cursor) (bool, error)
}

// State is an entity as it was at a moment, folded from its own stream.
type State struct {
	// Entity is the aggregate (a *node.Node, say); nil when the entity had
	// no events yet at that moment.
	Entity commands.Aggregate
	// Version of the stream reached, Cursor and At of its last event.
	Version int64
	Cursor  eventstore.Cursor
	At      time.Time
	// Events are the stream's events up to the moment, oldest first.
	Events []eventstore.RecordedEvent
}

// Exists reports whether the entity existed at that moment.
func (s State) Exists() bool { return s.Entity != nil }

// AsOf folds one entity's stream up to a moment. A stream that never
// existed is a *domain.NotFoundError; one that did not exist yet at that
// moment (a time before its first event, say) is a State that does not
// exist. A cursor must name an event of the log.
func AsOf(ctx context.Context, store Streams, k Kind, id string, at Point) (State, error) {
	var out State
	if err := projections.CheckCursor(ctx, store, at.Cursor); err != nil {
		return out, err
	}
	stream := domain.StreamID(k.Stream, id)
	var evs []eventstore.RecordedEvent
	var err error
	if !at.Start {
		evs, err = store.ReadStream(ctx, stream, eventstore.ReadStreamOptions{AsOf: at.Cursor, AsOfTime: at.Time})
	}
	var nf *eventstore.StreamNotFoundError
	if at.Start || errors.As(err, &nf) {
		// Nothing yet at that moment: did it exist at all?
		if _, err := store.ReadStream(ctx, stream, eventstore.ReadStreamOptions{AsOfVersion: 1}); err != nil {
			if errors.As(err, &nf) {
				return out, &domain.NotFoundError{Entity: k.Name, ID: id}
			}
			return out, err
		}
		return out, nil
	}
	if err != nil {
		return out, err
	}
	entity := k.fresh()
	for _, rec := range evs {
		ev, err := store.Decode(rec)
		if err != nil {
			return out, fmt.Errorf("%s %q as of %s: event at position %d: %w", k.Name, id, at, rec.Position, err)
		}
		entity.Apply(ev)
	}
	last := evs[len(evs)-1]
	return State{Entity: entity, Version: last.Version, Cursor: last.Cursor(), At: last.RecordedAt, Events: evs}, nil
}

// Change is one field that differs between two states of an entity, by the
// dotted path of its JSON form (StateJSON: labels.zone, facts.cpu.cores);
// Before or After is empty where the field was absent.
type Change struct {
	Path   string
	Before json.RawMessage
	After  json.RawMessage
}

// Diff is what changed in an entity between two moments.
type Diff struct {
	From, To State
	Changes  []Change
	// Events are those after From up to To, oldest first.
	Events []eventstore.RecordedEvent
}

// DiffOf compares an entity at two moments, in either order: the earlier
// becomes From.
func DiffOf(ctx context.Context, store Streams, k Kind, id string, from, to Point) (Diff, error) {
	var out Diff
	a, err := AsOf(ctx, store, k, id, from)
	if err != nil {
		return out, err
	}
	b, err := AsOf(ctx, store, k, id, to)
	if err != nil {
		return out, err
	}
	if b.Version < a.Version {
		a, b = b, a
	}
	out.From, out.To = a, b
	out.Events = b.Events[min(len(a.Events), len(b.Events)):]
	before, err := StateJSON(a.Entity)
	if err != nil {
		return out, err
	}
	after, err := StateJSON(b.Entity)
	if err != nil {
		return out, err
	}
	out.Changes, err = diffJSON(before, after)
	return out, err
}

// secretFields are never part of a rendered state: an API token's secret
// hash.
var secretFields = map[string]bool{"SecretHash": true}

// StateJSON renders an entity's state as JSON with lowerCamel keys (the
// API's spelling): secrets left out, times in RFC 3339, JSON held in byte
// slices embedded as JSON. A nil entity renders as nothing.
func StateJSON(entity any) (json.RawMessage, error) {
	if entity == nil || reflect.ValueOf(entity).IsNil() {
		return nil, nil
	}
	return json.Marshal(plain(reflect.ValueOf(entity)))
}

func plain(v reflect.Value) any {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if t, ok := v.Interface().(time.Time); ok {
		if t.IsZero() {
			return nil
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	if m, ok := v.Interface().(json.Marshaler); ok && v.Kind() != reflect.Struct {
		return m
	}
	switch v.Kind() {
	case reflect.Struct:
		out := map[string]any{}
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() || secretFields[f.Name] {
				continue
			}
			name := lowerCamel(f.Name)
			if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); tag != "" && tag != "-" {
				name = tag
			}
			out[name] = plain(v.Field(i))
		}
		return out
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			b := v.Bytes()
			if len(b) == 0 {
				return nil
			}
			if json.Valid(b) {
				return json.RawMessage(b)
			}
			return string(b)
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = plain(v.Index(i))
		}
		return out
	case reflect.Map:
		out := map[string]any{}
		for _, k := range v.MapKeys() {
			out[fmt.Sprint(k.Interface())] = plain(v.MapIndex(k))
		}
		return out
	}
	return v.Interface()
}

// lowerCamel turns a Go field name into a JSON key: ID → id, TenantID →
// tenantId, ResourceIDs → resourceIds, CPU → cpu.
func lowerCamel(s string) string {
	s = strings.ReplaceAll(s, "IDs", "Ids")
	s = strings.ReplaceAll(s, "ID", "Id")
	r := []rune(s)
	n := 0
	for n < len(r) && unicode.IsUpper(r[n]) {
		n++
	}
	switch {
	case n == 0:
		return s
	case n == 1 || n == len(r):
		for i := range n {
			r[i] = unicode.ToLower(r[i])
		}
	default: // an acronym then a word: CPUModel → cpuModel
		for i := range n - 1 {
			r[i] = unicode.ToLower(r[i])
		}
	}
	return string(r)
}

// diffJSON lists the leaves that differ between two JSON documents, by
// dotted path, sorted; objects are walked, lists compared whole.
func diffJSON(before, after json.RawMessage) ([]Change, error) {
	var a, b any
	if len(before) > 0 {
		if err := json.Unmarshal(before, &a); err != nil {
			return nil, err
		}
	}
	if len(after) > 0 {
		if err := json.Unmarshal(after, &b); err != nil {
			return nil, err
		}
	}
	var out []Change
	var walk func(path string, x, y any)
	walk = func(path string, x, y any) {
		mx, okx := x.(map[string]any)
		my, oky := y.(map[string]any)
		if okx && oky {
			keys := map[string]bool{}
			for k := range mx {
				keys[k] = true
			}
			for k := range my {
				keys[k] = true
			}
			sorted := make([]string, 0, len(keys))
			for k := range keys {
				sorted = append(sorted, k)
			}
			sort.Strings(sorted)
			for _, k := range sorted {
				p := k
				if path != "" {
					p = path + "." + k
				}
				walk(p, mx[k], my[k])
			}
			return
		}
		jx, _ := json.Marshal(x)
		jy, _ := json.Marshal(y)
		if string(jx) == string(jy) {
			return
		}
		ch := Change{Path: path}
		if x != nil {
			ch.Before = jx
		}
		if y != nil {
			ch.After = jy
		}
		out = append(out, ch)
	}
	walk("", a, b)
	return out, nil
}
