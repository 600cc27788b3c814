package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"runtime/debug"
	"slices"
	"sort"
	"sync"
)

// namePattern is the descriptor's rule for plugin names (a DNS label).
var namePattern = regexp.MustCompile(`^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$`)

// Registry holds the plugins a server offers, by the name descriptors use.
// It implements ocl.PluginCatalog, so descriptors are validated against
// exactly the plugins that will run them. It is safe for concurrent use.
type Registry struct {
	mu      sync.RWMutex
	plugins map[string]entry
}

type entry struct {
	plugin Plugin
	types  map[string]ResourceType
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{plugins: map[string]entry{}} }

// Register adds a plugin under name. The name must be a DNS label, unused,
// and the plugin must serve at least one type, each named once.
func (r *Registry) Register(name string, p Plugin) error {
	if !namePattern.MatchString(name) {
		return fmt.Errorf("plugins: name %q must be a DNS label: 1-63 of a-z, 0-9, '-', starting with a letter", name)
	}
	if p == nil {
		return fmt.Errorf("plugins: %q: plugin is nil", name)
	}
	types := map[string]ResourceType{}
	for _, t := range p.ResourceTypes() {
		if t.Name == "" {
			return fmt.Errorf("plugins: %q offers a resource type without a name", name)
		}
		if _, dup := types[t.Name]; dup {
			return fmt.Errorf("plugins: %q offers resource type %q twice", name, t.Name)
		}
		if len(t.Schema) > 0 && !json.Valid(t.Schema) {
			return fmt.Errorf("plugins: %q: the property schema of %q is not valid JSON", name, t.Name)
		}
		types[t.Name] = t
	}
	if len(types) == 0 {
		return fmt.Errorf("plugins: %q offers no resource types", name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.plugins[name]; dup {
		return fmt.Errorf("plugins: a plugin named %q is already registered", name)
	}
	r.plugins[name] = entry{plugin: p, types: types}
	return nil
}

// Get returns the plugin registered under name.
func (r *Registry) Get(name string) (Plugin, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.plugins[name]
	return e.plugin, ok
}

// Names lists the registered plugins, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.plugins))
	for n := range r.plugins {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Types lists a plugin's resource types, sorted by name.
func (r *Registry) Types(plugin string) ([]ResourceType, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.plugins[plugin]
	if !ok {
		return nil, false
	}
	out := make([]ResourceType, 0, len(e.types))
	for _, t := range e.types {
		t.Schema = slices.Clone(t.Schema)
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, true
}

// UpdatesInPlace reports whether a plugin's type changes its resources in
// place (see ResourceType.UpdateInPlace); false for unknown ones.
func (r *Registry) UpdatesInPlace(plugin, typ string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.plugins[plugin].types[typ].UpdateInPlace
}

// ResourceTypes implements ocl.PluginCatalog: the types a plugin serves with
// their property schemas.
func (r *Registry) ResourceTypes(plugin string) (map[string]json.RawMessage, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.plugins[plugin]
	if !ok {
		return nil, false
	}
	out := make(map[string]json.RawMessage, len(e.types))
	for name, t := range e.types {
		out[name] = slices.Clone(t.Schema)
	}
	return out, true
}

// Call runs one lifecycle call on the named plugin and checks what comes
// back: errors are wrapped in a *CallError, a panic in the plugin becomes an
// error instead of taking the server down, and outputs must be a JSON object
// (returned compacted; nil for none).
func (r *Registry) Call(ctx context.Context, plugin string, op Op, req Request) (out json.RawMessage, err error) {
	r.mu.RLock()
	e, ok := r.plugins[plugin]
	r.mu.RUnlock()
	wrap := func(err error) error {
		return &CallError{Plugin: plugin, Op: op, ResourceID: req.ResourceID, Type: req.Type, Err: err}
	}
	if !ok {
		return nil, wrap(&UnknownPluginError{Name: plugin, Known: r.Names()})
	}
	if _, ok := e.types[req.Type]; !ok {
		return nil, wrap(&UnknownTypeError{Plugin: plugin, Type: req.Type})
	}
	var fn func(context.Context, Request) (json.RawMessage, error)
	switch op {
	case OpCreate:
		fn = e.plugin.Create
	case OpStart:
		fn = e.plugin.Start
	case OpStop:
		fn = e.plugin.Stop
	case OpUpdate:
		fn = e.plugin.Update
	case OpDestroy:
		fn = e.plugin.Destroy
	case OpObserve:
		fn = e.plugin.Observe
	default:
		return nil, wrap(fmt.Errorf("unknown call %q", op))
	}
	defer func() {
		if p := recover(); p != nil {
			// The stack is for the plugin's author, not for the event log.
			out, err = nil, wrap(&PanicError{Value: fmt.Sprint(p), Stack: string(debug.Stack())})
		}
	}()
	raw, err := fn(ctx, req)
	if err != nil {
		return nil, wrap(err)
	}
	out, err = CheckOutputs(raw)
	if err != nil {
		return nil, wrap(err)
	}
	return out, nil
}

// CheckHealth evaluates one health check through the plugin that owns the
// resource; a plugin that evaluates none answers ErrCheckUnsupported.
func (r *Registry) CheckHealth(ctx context.Context, plugin string, req Request, c Check) (h Health, err error) {
	r.mu.RLock()
	e, ok := r.plugins[plugin]
	r.mu.RUnlock()
	if !ok {
		return Health{}, &UnknownPluginError{Name: plugin, Known: r.Names()}
	}
	hc, ok := e.plugin.(HealthChecker)
	if !ok {
		return Health{}, fmt.Errorf("plugin %s: %w", plugin, ErrCheckUnsupported)
	}
	defer func() {
		if p := recover(); p != nil {
			h, err = Health{}, &PanicError{Value: fmt.Sprint(p), Stack: string(debug.Stack())}
		}
	}()
	return hc.CheckHealth(ctx, req, c)
}

// Close closes every plugin that holds resources of its own (a child
// process, say) and returns their errors joined.
func (r *Registry) Close() error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var errs []error
	for _, name := range r.namesLocked() {
		if c, ok := r.plugins[name].plugin.(io.Closer); ok {
			if err := c.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close plugin %q: %w", name, err))
			}
		}
	}
	return errors.Join(errs...)
}

func (r *Registry) namesLocked() []string {
	names := make([]string, 0, len(r.plugins))
	for n := range r.plugins {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
