package graph

import (
	"cairn/auth"
	"cairn/domain"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"

	"cairn/commands"
	"cairn/domain/job"
	"cairn/domain/node"
	"cairn/domain/resource"
	"cairn/domain/service"
	"cairn/domain/template"
	"cairn/domain/tenant"
	"cairn/eventstore"
	"cairn/graph/model"
)

// Entities as of a past moment are computed by replaying their own stream up
// to it: the read models only know the present. This is the auditor's view,
// one stream per request, never a replay of the whole log.

// entityKind ties an API entity type to its stream and aggregate.
type entityKind struct {
	stream string
	name   string
	fresh  func() commands.Aggregate
}

var entityKinds = map[model.EntityType]entityKind{
	model.EntityTypeNode:     {domain.NodeStream, "node", func() commands.Aggregate { return &node.Node{} }},
	model.EntityTypeJob:      {domain.JobStream, "job", func() commands.Aggregate { return &job.Job{} }},
	model.EntityTypeTemplate: {domain.TemplateStream, "template", func() commands.Aggregate { return &template.TemplateVersion{} }},
	model.EntityTypeService:  {domain.ServiceStream, "service", func() commands.Aggregate { return &service.Service{} }},
	model.EntityTypeResource: {domain.ResourceStream, "resource", func() commands.Aggregate { return &resource.Resource{} }},
	model.EntityTypeTenant:   {domain.TenantStream, "tenant", func() commands.Aggregate { return &tenant.Tenant{} }},
	model.EntityTypeUser:     {domain.UserStream, "user", func() commands.Aggregate { return &tenant.User{} }},
	model.EntityTypeAPIToken: {domain.TokenStream, "api token", func() commands.Aggregate { return &tenant.APIToken{} }},
	model.EntityTypeLocation: {domain.LocationStream, "location", func() commands.Aggregate { return &tenant.Location{} }},
}

// replayed is an aggregate folded from its stream up to a moment.
type replayed struct {
	state   commands.Aggregate // nil when the entity did not exist yet
	version int64
	cursor  eventstore.Cursor
	at      time.Time
	events  []eventstore.RecordedEvent
}

// asOfOptions turns the API's AsOf into stream read options.
func asOfOptions(a model.AsOf) (eventstore.ReadStreamOptions, error) {
	switch {
	case a.Time != nil && a.Cursor != nil:
		return eventstore.ReadStreamOptions{}, invalidInput("asOf", "give either time or cursor, not both")
	case a.Time != nil:
		return eventstore.ReadStreamOptions{AsOfTime: *a.Time}, nil
	case a.Cursor != nil:
		c := eventstore.Cursor(*a.Cursor)
		if c.IsZero() {
			// The start of the log: nothing existed.
			return eventstore.ReadStreamOptions{AsOfVersion: -1}, nil
		}
		return eventstore.ReadStreamOptions{AsOf: c}, nil
	}
	return eventstore.ReadStreamOptions{}, invalidInput("asOf", "give a time or a cursor")
}

// replay folds one entity's stream up to a moment.
func replay(ctx context.Context, store EventLog, kind entityKind, id string, a model.AsOf) (replayed, error) {
	opts, err := asOfOptions(a)
	if err != nil {
		return replayed{}, err
	}
	if opts.AsOfVersion < 0 {
		return replayed{}, nil
	}
	evs, err := store.ReadStream(ctx, domain.StreamID(kind.stream, id), opts)
	var nf *eventstore.StreamNotFoundError
	if errors.As(err, &nf) {
		return replayed{}, nil
	}
	if err != nil {
		return replayed{}, err
	}
	state := kind.fresh()
	for _, rec := range evs {
		ev, err := store.Decode(rec)
		if err != nil {
			return replayed{}, fmt.Errorf("replay %s %q: %w", kind.name, id, err)
		}
		state.Apply(ev)
	}
	last := evs[len(evs)-1]
	return replayed{state: state, version: last.Version, cursor: last.Cursor(), at: last.RecordedAt, events: evs}, nil
}

// secretFields are never part of a state the API returns.
var secretFields = map[string]bool{"SecretHash": true}

// stateJSON renders a domain state as JSON with lowerCamel keys: secrets
// left out, JSON held in byte slices embedded as JSON.
func stateJSON(v any) (json.RawMessage, error) {
	return json.Marshal(plain(reflect.ValueOf(v)))
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
// dotted path, sorted.
func diffJSON(before, after json.RawMessage) ([]model.FieldChange, error) {
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
	var out []model.FieldChange
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
		ch := model.FieldChange{Path: path}
		if x != nil {
			ch.Before = model.JSON(jx)
		}
		if y != nil {
			ch.After = model.JSON(jy)
		}
		out = append(out, ch)
	}
	walk("", a, b)
	return out, nil
}

// entityState renders a replayed entity for the API.
func entityState(kind model.EntityType, id string, r replayed) (*model.EntityState, error) {
	out := &model.EntityState{Type: kind, ID: id, Version: int(r.version), Cursor: model.Cursor(r.cursor)}
	if r.state == nil {
		return out, nil
	}
	if !r.at.IsZero() {
		at := r.at
		out.Time = &at
	}
	st, err := stateJSON(r.state)
	if err != nil {
		return nil, err
	}
	out.State = model.JSON(st)
	return out, nil
}

// laterOf orders two replays so a diff always runs forward in time.
func laterOf(a, b replayed) bool { return b.cursor.Less(a.cursor) }

// eventsBetween are the events of to's replay after from's version.
func eventsBetween(from, to replayed) []eventstore.RecordedEvent {
	i := slices.IndexFunc(to.events, func(e eventstore.RecordedEvent) bool { return e.Version > from.version })
	if i < 0 {
		return nil
	}
	return to.events[i:]
}

// auditable checks who may read an entity's past: auditors and admins any
// entity; tenant roles their own tenant's services (checked on the replay).
func (s *Server) auditable(ctx context.Context, ref model.EntityRef) (entityKind, error) {
	kind, ok := entityKinds[ref.Type]
	if !ok {
		return entityKind{}, invalidInput("entity.type", "%s has no history to replay", ref.Type)
	}
	p := principal(ctx)
	if tenantScoped(p) && ref.Type == model.EntityTypeService {
		_, err := s.authorizeOwn(ctx, auth.ServiceRead)
		return kind, err
	}
	// The whole history, beyond any one tenant.
	_, err := s.authorize(ctx, auth.EventRead, auth.Resource{})
	return kind, err
}

// mayReadReplay hides another tenant's service from a tenant role, exactly
// as if it did not exist.
func (s *Server) mayReadReplay(ctx context.Context, ref model.EntityRef, r replayed) error {
	p := principal(ctx)
	if !tenantScoped(p) || r.state == nil {
		return nil
	}
	if svc, ok := r.state.(*service.Service); ok && svc.TenantID == p.TenantID {
		return nil
	}
	return notFound(kindName(ref.Type), ref.ID)
}

func kindName(t model.EntityType) string { return entityKinds[t].name }
