// Package fake is a plugin that does no real work: it keeps its resources in
// memory, so tests can see exactly what exists, inject failures and crashes
// at chosen calls, and measure the orchestrator's own overhead.
package fake

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"cairn/plugins"
)

// TypeThing is the one resource type the plugin serves. Its properties are
// any JSON object; the outputs echo them with "id" and "state" added, so a
// descriptor can reference any property of another thing as an output.
const TypeThing = "thing"

// TypePlacedThing is a thing that runs on one of Cairn's nodes: the
// scheduler places it, and the call names the node (Call.Node).
const TypePlacedThing = "placed-thing"

// State is where a fake resource is.
type State string

const (
	StateCreated State = "created"
	StateRunning State = "running"
	StateStopped State = "stopped"
)

// Resource is one live fake resource.
type Resource struct {
	ID         string
	Properties map[string]any
	State      State
}

// Call is one call the plugin received.
type Call struct {
	Op         plugins.Op
	ResourceID string
	// Node is the node the scheduler placed a placed thing on.
	Node string
	Err  error // what the call returned
}

// Options configure a Plugin. The zero value does every call at once and
// never fails.
type Options struct {
	// Fail, when it returns an error, makes the call fail with it before
	// doing anything.
	Fail func(op plugins.Op, r plugins.Request) error
	// Delay is how long each call takes (respecting its context).
	Delay time.Duration
	// After runs once a call has done its work, before it returns: tests use
	// it to stop the orchestrator between the work and its record.
	After func(op plugins.Op, r plugins.Request)
	// Replaced has the types declare no update in place, so a change of
	// properties replaces their resources.
	Replaced bool
}

// CheckHealth implements plugins.HealthChecker: a check passes while its
// resource exists and the check was not made to fail with SetHealth.
func (p *Plugin) CheckHealth(_ context.Context, r plugins.Request, c plugins.Check) (plugins.Health, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.resources[r.ResourceID]; !ok {
		return plugins.Health{Detail: "it does not exist"}, nil
	}
	if why, failing := p.unhealthy[r.ResourceID+"/"+c.Name]; failing {
		return plugins.Health{Detail: why}, nil
	}
	return plugins.Health{Healthy: true}, nil
}

// SetHealth makes a check of a resource fail (with why) or pass again
// (why == "").
func (p *Plugin) SetHealth(resourceID, check, why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if why == "" {
		delete(p.unhealthy, resourceID+"/"+check)
		return
	}
	p.unhealthy[resourceID+"/"+check] = why
}

// Plugin is the fake plugin. It is safe for concurrent use.
type Plugin struct {
	opts Options

	mu        sync.Mutex
	resources map[string]*Resource
	calls     []Call
	unhealthy map[string]string // resource id/check → why
}

// New returns a plugin with no resources.
func New(opts Options) *Plugin {
	return &Plugin{opts: opts, resources: map[string]*Resource{}, unhealthy: map[string]string{}}
}

// ResourceTypes implements plugins.Plugin.
func (p *Plugin) ResourceTypes() []plugins.ResourceType {
	schema := json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}`)
	return []plugins.ResourceType{{
		Name: TypeThing, Schema: schema,
		Description: "Nothing real: kept in memory, outputs echo the properties.", UpdateInPlace: !p.opts.Replaced,
	}, {
		Name: TypePlacedThing, Schema: schema, Placed: true, UpdateInPlace: !p.opts.Replaced,
		Description: "A thing on a node the scheduler chose.",
	}}
}

// Create implements plugins.Plugin.
func (p *Plugin) Create(ctx context.Context, r plugins.Request) (json.RawMessage, error) {
	return p.do(ctx, plugins.OpCreate, r, func() (*Resource, error) {
		if res, ok := p.resources[r.ResourceID]; ok {
			return res, nil
		}
		props := map[string]any{}
		if len(r.Properties) > 0 {
			if err := json.Unmarshal(r.Properties, &props); err != nil {
				return nil, fmt.Errorf("properties must be a JSON object: %w", err)
			}
		}
		res := &Resource{ID: r.ResourceID, Properties: props, State: StateCreated}
		p.resources[r.ResourceID] = res
		return res, nil
	})
}

// Start implements plugins.Plugin.
func (p *Plugin) Start(ctx context.Context, r plugins.Request) (json.RawMessage, error) {
	return p.do(ctx, plugins.OpStart, r, func() (*Resource, error) {
		res, ok := p.resources[r.ResourceID]
		if !ok {
			return nil, fmt.Errorf("start %s: %w", r.ResourceID, plugins.ErrNotFound)
		}
		res.State = StateRunning
		return res, nil
	})
}

// Stop implements plugins.Plugin.
func (p *Plugin) Stop(ctx context.Context, r plugins.Request) (json.RawMessage, error) {
	return p.do(ctx, plugins.OpStop, r, func() (*Resource, error) {
		res, ok := p.resources[r.ResourceID]
		if !ok {
			return nil, fmt.Errorf("stop %s: %w", r.ResourceID, plugins.ErrNotFound)
		}
		res.State = StateStopped
		return res, nil
	})
}

// Update implements plugins.Plugin: the properties are replaced, the state
// kept.
func (p *Plugin) Update(ctx context.Context, r plugins.Request) (json.RawMessage, error) {
	return p.do(ctx, plugins.OpUpdate, r, func() (*Resource, error) {
		res, ok := p.resources[r.ResourceID]
		if !ok {
			return nil, fmt.Errorf("update %s: %w", r.ResourceID, plugins.ErrNotFound)
		}
		props := map[string]any{}
		if len(r.Properties) > 0 {
			if err := json.Unmarshal(r.Properties, &props); err != nil {
				return nil, fmt.Errorf("properties must be a JSON object: %w", err)
			}
		}
		res.Properties = props
		return res, nil
	})
}

// Destroy implements plugins.Plugin.
func (p *Plugin) Destroy(ctx context.Context, r plugins.Request) (json.RawMessage, error) {
	return p.do(ctx, plugins.OpDestroy, r, func() (*Resource, error) {
		delete(p.resources, r.ResourceID)
		return nil, nil
	})
}

// Observe implements plugins.Plugin.
func (p *Plugin) Observe(ctx context.Context, r plugins.Request) (json.RawMessage, error) {
	return p.do(ctx, plugins.OpObserve, r, func() (*Resource, error) {
		res, ok := p.resources[r.ResourceID]
		if !ok {
			return nil, fmt.Errorf("observe %s: %w", r.ResourceID, plugins.ErrNotFound)
		}
		return res, nil
	})
}

func (p *Plugin) do(ctx context.Context, op plugins.Op, r plugins.Request, work func() (*Resource, error)) (out json.RawMessage, err error) {
	defer func() {
		p.mu.Lock()
		p.calls = append(p.calls, Call{Op: op, ResourceID: r.ResourceID, Node: r.Node, Err: err})
		p.mu.Unlock()
	}()
	if p.opts.Fail != nil {
		if err := p.opts.Fail(op, r); err != nil {
			return nil, err
		}
	}
	if p.opts.Delay > 0 {
		select {
		case <-time.After(p.opts.Delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	res, err := work()
	if err == nil && res != nil {
		out, err = outputs(res)
	}
	p.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if p.opts.After != nil {
		p.opts.After(op, r)
	}
	return out, nil
}

func outputs(res *Resource) (json.RawMessage, error) {
	o := maps.Clone(res.Properties)
	if o == nil {
		o = map[string]any{}
	}
	o["id"] = res.ID
	o["state"] = string(res.State)
	return json.Marshal(o)
}

// Live returns the ids of the resources that exist, sorted.
func (p *Plugin) Live() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := make([]string, 0, len(p.resources))
	for id := range p.resources {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Get returns a copy of a live resource.
func (p *Plugin) Get(id string) (Resource, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	res, ok := p.resources[id]
	if !ok {
		return Resource{}, false
	}
	c := *res
	c.Properties = maps.Clone(res.Properties)
	return c, true
}

// Calls returns every call received so far, in order.
func (p *Plugin) Calls() []Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.calls)
}

// FailAt returns a Fail function that fails op for the nth distinct resource
// it is called for (counting from 1), every time it is called for that
// resource, with err.
func FailAt(op plugins.Op, n int, err error) func(plugins.Op, plugins.Request) error {
	var mu sync.Mutex
	var seen []string
	return func(o plugins.Op, r plugins.Request) error {
		if o != op {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		i := slices.Index(seen, r.ResourceID)
		if i < 0 {
			seen = append(seen, r.ResourceID)
			i = len(seen) - 1
		}
		if i == n-1 {
			return err
		}
		return nil
	}
}

// Lose removes a resource behind the orchestrator's back, as drift does:
// the next observe finds it missing.
func (p *Plugin) Lose(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.resources[id]
	delete(p.resources, id)
	return ok
}
