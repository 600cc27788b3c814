// Package plugins is the one interface through which the orchestrator acts on
// infrastructure, and the registry that names the plugins a descriptor may
// use.
//
// A plugin serves resource types (each with a JSON Schema for its
// properties) and carries out six calls on one resource at a time: create,
// start, stop, update, destroy and observe. Every call names the resource by a
// deterministic id (see ocl.ResourceID), and every call must be idempotent by
// that id: after a crash the orchestrator repeats the step it was in, so a
// plugin sees a create for a resource it already made, or a destroy for one
// that is already gone, and must answer as if the first call had been the
// only one. Subpackages hold the built-in plugins, one package each.
package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"cairn/domain/placement"
)

// Op names a lifecycle call.
type Op string

const (
	OpCreate  Op = "create"
	OpStart   Op = "start"
	OpStop    Op = "stop"
	OpUpdate  Op = "update"
	OpDestroy Op = "destroy"
	OpObserve Op = "observe"
)

// Ops lists every lifecycle call in lifecycle order.
var Ops = []Op{OpCreate, OpStart, OpStop, OpUpdate, OpDestroy, OpObserve}

// MaxOutputBytes bounds the outputs a call may return: they are recorded in
// an event.
const MaxOutputBytes = 1 << 20

// Placement says where a resource may go: a location and node labels. Only
// plugins that place work on Cairn's nodes read it.
type Placement struct {
	Location string            `json:"location,omitempty"`
	Labels   map[string]string `json:"labels,omitempty"`
}

// Request is one call on one resource.
type Request struct {
	// ResourceID is deterministic (the same service and instance always get
	// the same id) and is the idempotency key of every call.
	ResourceID string `json:"resourceId"`
	// Type is one of the plugin's resource types.
	Type string `json:"type"`
	// Properties are the resource's properties with every expression
	// resolved: a JSON value that passed the type's schema when the
	// descriptor was validated (expressions are checked only here, so a
	// plugin still checks what it relies on).
	Properties json.RawMessage `json:"properties,omitempty"`
	// Placement is nil when the descriptor gives none.
	Placement *Placement `json:"placement,omitempty"`
	// Node is the node the scheduler allocated the resource on, for the
	// types that are placed (empty when no scheduler runs).
	Node string `json:"node,omitempty"`
	// Outputs are the outputs last recorded for the resource (nil before a
	// create completed). A plugin uses them to find what it made, e.g. the
	// node a directory was placed on.
	Outputs json.RawMessage `json:"outputs,omitempty"`
	// ServiceID and TenantID name the service the resource belongs to and
	// its tenant.
	ServiceID string `json:"serviceId,omitempty"`
	TenantID  string `json:"tenantId,omitempty"`
	// Sensitive says the properties hold the value of a sensitive variable:
	// a plugin must not record or log them in clear.
	Sensitive bool `json:"sensitive,omitempty"`
}

// ResourceType is a type a plugin serves.
type ResourceType struct {
	Name string `json:"name"`
	// Schema is the JSON Schema (draft 2020-12) of the type's properties;
	// nil accepts anything.
	Schema      json.RawMessage `json:"schema,omitempty"`
	Description string          `json:"description,omitempty"`
	// Placed says the type's resources run on one of Cairn's nodes, which
	// the scheduler chooses (and Request.Node names) before create.
	Placed bool `json:"placed,omitempty"`
	// DefaultRequests are what an instance asks of its node when the
	// descriptor's requests leave an amount out.
	DefaultRequests placement.Resources `json:"defaultRequests,omitzero"`
	// UpdateInPlace says Update changes a resource of this type to new
	// properties where it stands. Without it a change of properties
	// replaces the resource: destroyed, then created again.
	UpdateInPlace bool `json:"updateInPlace,omitempty"`
}

// Plugin manages resources of some kind of infrastructure.
//
// Each call returns the resource's outputs as a JSON object (nil for none),
// which later resources reference as ${resource.NAME.outputs.KEY}. Calls must
// be idempotent by Request.ResourceID: create of an existing resource returns
// its outputs, start of a running one and stop of a stopped one succeed,
// destroy of a missing one succeeds. Observe returns the resource's current
// outputs, or an error wrapping ErrNotFound when it does not exist.
//
// Update brings an existing resource to new properties (Request.Properties;
// Request.Outputs are those it has now) and keeps it running if it ran. It
// is called only for types that declare UpdateInPlace, and must be
// idempotent too: an update repeated with the same properties changes
// nothing. Types that cannot change in place answer with an error wrapping
// ErrReplace.
//
// A call should return promptly when ctx ends; the orchestrator then repeats
// it later rather than recording a failure.
type Plugin interface {
	ResourceTypes() []ResourceType
	Create(ctx context.Context, r Request) (json.RawMessage, error)
	Start(ctx context.Context, r Request) (json.RawMessage, error)
	Stop(ctx context.Context, r Request) (json.RawMessage, error)
	Update(ctx context.Context, r Request) (json.RawMessage, error)
	Destroy(ctx context.Context, r Request) (json.RawMessage, error)
	Observe(ctx context.Context, r Request) (json.RawMessage, error)
}

// Check is one health check of a resource, as its descriptor declares it
// with its properties resolved: process (the resource's process runs), tcp
// (port, host), http (port, host, path, scheme, expectStatus) or command
// (argv).
type Check struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Properties json.RawMessage `json:"properties,omitempty"`
	Timeout    time.Duration   `json:"timeout,omitempty"`
}

// Health is what a check found; Detail says why in words when unhealthy.
type Health struct {
	Healthy bool   `json:"healthy"`
	Detail  string `json:"detail,omitempty"`
}

// HealthChecker is implemented by a plugin that evaluates the health checks
// of its resources where they run (the agent plugin on the resource's node).
// A check type it does not evaluate is an error wrapping
// ErrCheckUnsupported.
type HealthChecker interface {
	CheckHealth(ctx context.Context, r Request, c Check) (Health, error)
}

// ErrCheckUnsupported is wrapped by CheckHealth for a check the plugin
// cannot evaluate.
var ErrCheckUnsupported = errors.New("this plugin does not evaluate health checks of this type")

// ErrNotFound is wrapped by Observe's error when the resource does not exist.
var ErrNotFound = errors.New("resource does not exist")

// ErrReplace is wrapped by Update's error for a type whose resources are
// replaced rather than changed in place.
var ErrReplace = errors.New("resources of this type are replaced, not updated in place")

// UnknownPluginError names a plugin that is not registered.
type UnknownPluginError struct {
	Name  string
	Known []string
}

func (e *UnknownPluginError) Error() string {
	if len(e.Known) == 0 {
		return fmt.Sprintf("plugin %q is not registered: this server has no plugins", e.Name)
	}
	return fmt.Sprintf("plugin %q is not registered on this server; registered: %v", e.Name, e.Known)
}

// UnknownTypeError names a resource type a plugin does not serve.
type UnknownTypeError struct {
	Plugin string
	Type   string
}

func (e *UnknownTypeError) Error() string {
	return fmt.Sprintf("plugin %q has no resource type %q", e.Plugin, e.Type)
}

// CallError is a failed call, naming the plugin, the call and the resource.
type CallError struct {
	Plugin     string
	Op         Op
	ResourceID string
	Type       string
	Err        error
}

func (e *CallError) Error() string {
	return fmt.Sprintf("%s %s of %s resource %s: %v", e.Plugin, e.Op, e.Type, e.ResourceID, e.Err)
}

func (e *CallError) Unwrap() error { return e.Err }

// PanicError is a plugin call that panicked. Error gives the panic's value;
// Stack is for logs.
type PanicError struct {
	Value string
	Stack string
}

func (e *PanicError) Error() string { return "the plugin panicked: " + e.Value }

// OutputError reports outputs a plugin returned that Cairn cannot record.
type OutputError struct{ Reason string }

func (e *OutputError) Error() string { return "the plugin returned unusable outputs: " + e.Reason }

// CheckOutputs accepts nothing, null or a JSON object of at most
// MaxOutputBytes, and returns it compacted (nil for nothing or null).
func CheckOutputs(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	if len(raw) > MaxOutputBytes {
		return nil, &OutputError{Reason: fmt.Sprintf("%d bytes, more than the %d allowed", len(raw), MaxOutputBytes)}
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, &OutputError{Reason: "not valid JSON: " + err.Error()}
	}
	switch v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
	default:
		return nil, &OutputError{Reason: fmt.Sprintf("a JSON %s where an object was expected", jsonKind(v))}
	}
	var buf []byte
	buf, err := json.Marshal(json.RawMessage(raw))
	if err != nil {
		return nil, &OutputError{Reason: err.Error()}
	}
	return buf, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	}
	return "value"
}
