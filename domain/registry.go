package domain

import (
	"encoding/json"
	"fmt"
	"sort"
)

// Upcaster turns a payload written at schema version From into version From+1.
// Upcasters are pure functions on JSON so that old events never need rewriting.
type Upcaster struct {
	From    int
	Upgrade func(payload json.RawMessage) (json.RawMessage, error)
}

type registration struct {
	version   int
	decode    func(payload []byte) (Event, error)
	upcasters map[int]Upcaster
}

// Registry maps event type names to Go types, their current schema version and
// the upcasters that lift older payloads to it.
type Registry struct {
	types map[string]registration
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{types: map[string]registration{}}
}

// Register adds the event type E at its current schema version. Decoding
// yields E as a value, so evolvers and type switches have one case per type.
// It panics on a duplicate or inconsistent registration: that is a
// programming error found at start-up.
func Register[E Event](r *Registry, version int, upcasters ...Upcaster) {
	var zero E
	name := zero.EventType()
	if _, dup := r.types[name]; dup {
		panic(fmt.Sprintf("domain: event type %q registered twice", name))
	}
	if version < 1 {
		panic(fmt.Sprintf("domain: event type %q: schema version must be >= 1", name))
	}
	ups := map[int]Upcaster{}
	for _, u := range upcasters {
		if u.From < 1 || u.From >= version {
			panic(fmt.Sprintf("domain: event type %q: upcaster from version %d outside 1..%d", name, u.From, version-1))
		}
		ups[u.From] = u
	}
	for v := 1; v < version; v++ {
		if _, ok := ups[v]; !ok && len(upcasters) > 0 {
			panic(fmt.Sprintf("domain: event type %q: no upcaster from version %d", name, v))
		}
	}
	decode := func(payload []byte) (Event, error) {
		var e E
		if err := json.Unmarshal(payload, &e); err != nil {
			return nil, err
		}
		return e, nil
	}
	r.types[name] = registration{version: version, decode: decode, upcasters: ups}
}

// Types lists the registered event type names in order.
func (r *Registry) Types() []string {
	out := make([]string, 0, len(r.types))
	for name := range r.types {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// SchemaVersion returns the current schema version of an event type.
func (r *Registry) SchemaVersion(eventType string) (int, error) {
	reg, ok := r.types[eventType]
	if !ok {
		return 0, &UnknownEventTypeError{EventType: eventType}
	}
	return reg.version, nil
}

// Encode returns the event's type name, current schema version and JSON payload.
func (r *Registry) Encode(e Event) (eventType string, version int, payload []byte, err error) {
	eventType = e.EventType()
	reg, ok := r.types[eventType]
	if !ok {
		return "", 0, nil, &UnknownEventTypeError{EventType: eventType}
	}
	payload, err = json.Marshal(e)
	if err != nil {
		return "", 0, nil, fmt.Errorf("encode %s: %w", eventType, err)
	}
	return eventType, reg.version, payload, nil
}

// Upcast lifts a payload stored at schemaVersion to the type's current version.
func (r *Registry) Upcast(eventType string, schemaVersion int, payload json.RawMessage) (json.RawMessage, error) {
	reg, ok := r.types[eventType]
	if !ok {
		return nil, &UnknownEventTypeError{EventType: eventType}
	}
	if schemaVersion > reg.version {
		return nil, &DecodeError{EventType: eventType, Reason: fmt.Sprintf("schema version %d is newer than this build knows (%d); upgrade cairn", schemaVersion, reg.version)}
	}
	for v := schemaVersion; v < reg.version; v++ {
		up, ok := reg.upcasters[v]
		if !ok {
			return nil, &DecodeError{EventType: eventType, Reason: fmt.Sprintf("no upcaster from schema version %d", v)}
		}
		next, err := up.Upgrade(payload)
		if err != nil {
			return nil, &DecodeError{EventType: eventType, Reason: fmt.Sprintf("upcast from schema version %d: %v", v, err)}
		}
		payload = next
	}
	return payload, nil
}

// Decode upcasts a stored payload and unmarshals it into the registered Go
// type, returned as a value.
func (r *Registry) Decode(eventType string, schemaVersion int, payload json.RawMessage) (Event, error) {
	current, err := r.Upcast(eventType, schemaVersion, payload)
	if err != nil {
		return nil, err
	}
	e, err := r.types[eventType].decode(current)
	if err != nil {
		return nil, &DecodeError{EventType: eventType, Reason: err.Error()}
	}
	return e, nil
}

// UnknownEventTypeError is returned for an event type with no registered decoder.
type UnknownEventTypeError struct{ EventType string }

func (e *UnknownEventTypeError) Error() string {
	return fmt.Sprintf("unknown event type %q: no decoder is registered for it", e.EventType)
}

// DecodeError is returned when a stored payload cannot be turned into its Go type.
type DecodeError struct {
	EventType string
	Reason    string
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("cannot decode event of type %q: %s", e.EventType, e.Reason)
}
