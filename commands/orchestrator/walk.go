package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"cairn/domain"
	"cairn/domain/ocl"
	"cairn/domain/resource"
	"cairn/domain/service"
	"cairn/plugins"
)

// failure is a step that failed for a reason worth recording (a plugin
// error, a resource that cannot take the step); any other error from a step
// is the log or the database failing, and the pass is retried.
type failure struct {
	node string
	err  error
}

func (f failure) String() string { return fmt.Sprintf("resource %s: %v", f.node, f.err) }

// cause joins failures into one message for the service's event.
func cause(fs []failure) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.String()
	}
	return truncate(strings.Join(parts, "; "), service.MaxCauseLength)
}

// truncate makes s fit an event's text field: valid UTF-8, no control
// characters but newlines and tabs (terminal colours, say, from a plugin's
// output), not empty, at most n bytes. The domain refuses anything else, and
// a refused failure could never be recorded.
func truncate(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && r != '\n' && r != '\t' {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
	s = strings.TrimSpace(s)
	if s == "" {
		return "failed without saying why"
	}
	if len(s) <= n {
		return s
	}
	const more = " …"
	cut := n - len(more)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + more
}

// drive runs passes over a service until it has nothing left to do. Each
// pass ends with the service event that moves it out of its busy status, so
// the loop ends; an error means the log could not be read or written.
func (o *Orchestrator) drive(ctx context.Context, id string) error {
	for {
		d, err := o.load(ctx, id)
		if err != nil {
			return err
		}
		p, busy := phases[d.svc.Status]
		if !busy {
			return nil
		}
		if err := o.walk(ctx, d, p); err != nil {
			return err
		}
	}
}

// walk runs one pass of a phase over the service's graph, level by level,
// and records the outcome.
func (o *Orchestrator) walk(ctx context.Context, d *deployment, p phase) error {
	if p.destroys {
		return o.walkDestroying(ctx, d, p)
	}
	if p.converge {
		return o.walkConverge(ctx, d, p)
	}
	fail := func(why string) error {
		return o.decideService(ctx, d, func(s service.Service) ([]domain.Event, error) {
			return p.fail(o, s, nil, truncate(why, service.MaxCauseLength), o.cfg.Clock())
		})
	}
	if d.planErr != nil {
		return fail(d.planErr.Error())
	}
	if p.plan {
		if err := o.ensurePlanned(ctx, d); err != nil {
			var pe *planError
			if errors.As(err, &pe) {
				return fail(pe.Error())
			}
			return err
		}
	}
	for _, level := range d.graph.Walk(p.reverse) {
		fails, err := o.eachInLevel(ctx, d, level, func(ctx context.Context, t *tracked) (*failure, error) {
			return p.step(o, ctx, d, t)
		})
		if err != nil {
			return err
		}
		if len(fails) > 0 {
			return fail(cause(fails))
		}
	}
	var outputs json.RawMessage
	if p.outputs {
		var err error
		if outputs, err = d.serviceOutputs(); err != nil {
			return fail(err.Error())
		}
	}
	return o.decideService(ctx, d, func(s service.Service) ([]domain.Event, error) {
		return p.complete(s, outputs, o.cfg.Clock())
	})
}

// walkDestroying runs a destroying phase: every resource it can destroy
// goes, and a failure lists those that remain.
func (o *Orchestrator) walkDestroying(ctx context.Context, d *deployment, p phase) error {
	remaining, why, err := o.destroyAll(ctx, d, p)
	if err != nil {
		return err
	}
	return o.decideService(ctx, d, func(s service.Service) ([]domain.Event, error) {
		if len(remaining) > 0 {
			return p.fail(o, s, remaining, why, o.cfg.Clock())
		}
		return p.complete(s, nil, o.cfg.Clock())
	})
}

// eachInLevel runs step for every instance of one level, at most
// Parallelism at a time, and collects the failures in plan order. It waits
// for every step it started, so no call is left running unobserved.
func (o *Orchestrator) eachInLevel(ctx context.Context, d *deployment, level []string, step func(context.Context, *tracked) (*failure, error)) ([]failure, error) {
	fails := make([]*failure, len(level))
	errs := make([]error, len(level))
	sem := make(chan struct{}, o.cfg.Parallelism)
	var wg sync.WaitGroup
	for i, name := range level {
		t := d.nodes[name]
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fails[i], errs[i] = step(ctx, t)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var out []failure
	for _, f := range fails {
		if f != nil {
			out = append(out, *f)
		}
	}
	return out, nil
}

// interrupted is reported when a call's context ended: the step is left as
// it is, to be repeated by the next pass.
func interrupted(ctx context.Context) error {
	return fmt.Errorf("interrupted: %w", context.Cause(ctx))
}

// create brings one resource to created.
func (o *Orchestrator) create(ctx context.Context, d *deployment, t *tracked) (*failure, error) {
	s := t.state
	switch {
	case s.Status == resource.StatusCreated:
		return nil, nil
	case d.failedInRun(t, resource.PhaseCreate):
		return &failure{t.node.Name, errors.New(s.Error)}, nil
	case s.Status == resource.StatusCreating:
		// The outcome of an earlier call was not recorded: ask again.
	case s.Status == resource.StatusPending || s.Status == resource.StatusFailed && s.FailedIn == resource.PhaseCreate:
		if err := o.decideResource(ctx, d, t, func(r resource.Resource) ([]domain.Event, error) {
			return r.BeginCreate(resource.BeginCreate{ResourceID: r.ID, At: o.cfg.Clock()})
		}); err != nil {
			return nil, err
		}
	default:
		return &failure{t.node.Name, fmt.Errorf("it is %s and cannot be created", describe(s))}, nil
	}
	if f, err := o.place(ctx, d, t); err != nil || f != nil {
		if f != nil {
			if ferr := o.decideResource(ctx, d, t, func(r resource.Resource) ([]domain.Event, error) {
				return r.Fail(resource.Fail{ResourceID: r.ID, Error: truncate(f.err.Error(), resource.MaxErrorLength), At: o.cfg.Clock()})
			}); ferr != nil {
				return nil, ferr
			}
		}
		return f, err
	}
	out, err := o.call(ctx, d, t, plugins.OpCreate)
	return o.record(ctx, d, t, err, func(r resource.Resource) ([]domain.Event, error) {
		return r.CompleteCreate(resource.CompleteCreate{ResourceID: r.ID, Outputs: out, At: o.cfg.Clock()})
	})
}

// record appends a call's outcome: complete on success, a failure
// otherwise, unless the call was cut short by ctx (then nothing is recorded
// and the next pass repeats the call).
func (o *Orchestrator) record(ctx context.Context, d *deployment, t *tracked, callErr error,
	complete func(resource.Resource) ([]domain.Event, error)) (*failure, error) {
	if ctx.Err() != nil {
		return nil, interrupted(ctx)
	}
	if callErr != nil {
		msg := truncate(callErr.Error(), resource.MaxErrorLength)
		if err := o.decideResource(ctx, d, t, func(r resource.Resource) ([]domain.Event, error) {
			return r.Fail(resource.Fail{ResourceID: r.ID, Error: msg, At: o.cfg.Clock()})
		}); err != nil {
			return nil, err
		}
		return &failure{t.node.Name, callErr}, nil
	}
	return nil, o.decideResource(ctx, d, t, complete)
}

func phaseName(s resource.Status) string {
	if s == resource.StatusUpdating {
		return "update"
	}
	return "start"
}

func describe(r resource.Resource) string {
	if !r.Exists() {
		return "not planned"
	}
	if r.Status == resource.StatusFailed {
		return fmt.Sprintf("failed (in %s)", r.FailedIn)
	}
	return string(r.Status)
}

// startOne brings a resource to running.
func (o *Orchestrator) startOne(ctx context.Context, d *deployment, t *tracked) (*failure, error) {
	s := t.state
	switch {
	case s.Status == resource.StatusRunning:
		return nil, nil
	case d.failedInRun(t, resource.PhaseStart):
		return &failure{t.node.Name, errors.New(s.Error)}, nil
	case s.Status == resource.StatusStarting:
	case s.Status == resource.StatusCreated || s.Status == resource.StatusStopped ||
		s.Status == resource.StatusFailed && (s.FailedIn == resource.PhaseStart || s.FailedIn == resource.PhaseStop):
		if err := o.decideResource(ctx, d, t, func(r resource.Resource) ([]domain.Event, error) {
			return r.BeginStart(resource.BeginStart{ResourceID: r.ID, At: o.cfg.Clock()})
		}); err != nil {
			return nil, err
		}
	default:
		return &failure{t.node.Name, fmt.Errorf("it is %s and cannot be started", describe(s))}, nil
	}
	out, err := o.call(ctx, d, t, plugins.OpStart)
	return o.record(ctx, d, t, err, func(r resource.Resource) ([]domain.Event, error) {
		return r.CompleteStart(resource.CompleteStart{ResourceID: r.ID, Outputs: out, At: o.cfg.Clock()})
	})
}

// stopOne brings a resource to a status where it does not run (created or
// stopped).
func (o *Orchestrator) stopOne(ctx context.Context, d *deployment, t *tracked) (*failure, error) {
	s := t.state
	switch {
	case s.Status == resource.StatusCreated || s.Status == resource.StatusStopped:
		return nil, nil
	case d.failedInRun(t, resource.PhaseStop):
		return &failure{t.node.Name, errors.New(s.Error)}, nil
	case s.Status == resource.StatusStopping:
	case s.Status == resource.StatusStarting || s.Status == resource.StatusUpdating:
		// A start or update cut short by a crash, now superseded: record
		// that it did not finish, then stop whatever it may have started.
		if err := o.decideResource(ctx, d, t, func(r resource.Resource) ([]domain.Event, error) {
			return r.Fail(resource.Fail{ResourceID: r.ID, Error: fmt.Sprintf("%s was interrupted and then superseded by a stop", phaseName(r.Status)), At: o.cfg.Clock()})
		}); err != nil {
			return nil, err
		}
		return o.stopOne(ctx, d, t)
	case s.Status == resource.StatusRunning ||
		s.Status == resource.StatusFailed && (s.FailedIn == resource.PhaseStart || s.FailedIn == resource.PhaseStop || s.FailedIn == resource.PhaseUpdate):
		if err := o.decideResource(ctx, d, t, func(r resource.Resource) ([]domain.Event, error) {
			return r.BeginStop(resource.BeginStop{ResourceID: r.ID, At: o.cfg.Clock()})
		}); err != nil {
			return nil, err
		}
	default:
		return &failure{t.node.Name, fmt.Errorf("it is %s and cannot be stopped", describe(s))}, nil
	}
	out, err := o.call(ctx, d, t, plugins.OpStop)
	return o.record(ctx, d, t, err, func(r resource.Resource) ([]domain.Event, error) {
		return r.CompleteStop(resource.CompleteStop{ResourceID: r.ID, Outputs: out, At: o.cfg.Clock()})
	})
}

// destroyAll destroys the resources in reverse dependency order and returns
// the ids of those that remain with the reasons. A resource whose dependents
// remain is kept (destroying a directory under a running process helps no
// one) while other branches go on.
func (o *Orchestrator) destroyAll(ctx context.Context, d *deployment, p phase) ([]string, string, error) {
	if d.graph == nil {
		// Without a plan the resources cannot be addressed properly; list
		// what the registration recorded and left behind.
		var remaining []string
		for _, id := range d.svc.ResourceIDs {
			if o.resourceLeft(ctx, id) {
				remaining = append(remaining, id)
			}
		}
		return remaining, truncate(fmt.Sprintf("cannot address the resources: %v", d.planErr), service.MaxCauseLength), nil
	}
	var all []failure
	for _, level := range d.graph.Walk(p.reverse) {
		fails, err := o.eachInLevel(ctx, d, level, func(ctx context.Context, t *tracked) (*failure, error) {
			return p.step(o, ctx, d, t)
		})
		if err != nil {
			return nil, "", err
		}
		all = append(all, fails...)
	}
	var remaining []string
	for _, t := range d.order {
		if t.exists() && t.state.Status != resource.StatusDestroyed {
			remaining = append(remaining, t.node.ResourceID)
		}
	}
	return remaining, cause(all), nil
}

// resourceLeft reports whether a resource stream exists and is not
// destroyed; an unreadable one counts as left.
func (o *Orchestrator) resourceLeft(ctx context.Context, id string) bool {
	t := &tracked{node: ocl.Node{ResourceID: id}}
	if err := o.loadResource(ctx, t); err != nil {
		return true
	}
	return t.exists() && t.state.Status != resource.StatusDestroyed
}

func (o *Orchestrator) destroy(ctx context.Context, d *deployment, t *tracked) (*failure, error) {
	s := t.state
	if !t.exists() {
		return nil, nil
	}
	if s.Status == resource.StatusDestroyed {
		// Its allocation ends with it (again, if a crash came between).
		return nil, o.unplace(ctx, d, t)
	}
	for _, dep := range d.graph.Dependents(t.node.Name) {
		if u := d.nodes[dep]; u != nil && u.exists() && u.state.Status != resource.StatusDestroyed {
			return &failure{t.node.Name, fmt.Errorf("kept because %s, which depends on it, remains", dep)}, nil
		}
	}
	return o.destroyOne(ctx, d, t)
}

// destroyOne destroys a resource (stopping it first if it may run) and
// ends its allocation, whatever depends on it.
func (o *Orchestrator) destroyOne(ctx context.Context, d *deployment, t *tracked) (*failure, error) {
	s := t.state
	if s.Status == resource.StatusDestroyed {
		return nil, o.unplace(ctx, d, t)
	}
	switch {
	case s.Status == resource.StatusPending || o.neverPlaced(t):
		// No plugin call was ever made for it: there is nothing to destroy.
		at := o.cfg.Clock()
		return nil, o.decideResource(ctx, d, t, func(r resource.Resource) ([]domain.Event, error) {
			begun, err := r.BeginDestroy(resource.BeginDestroy{ResourceID: r.ID, At: at})
			if err != nil {
				return nil, err
			}
			for _, ev := range begun {
				r.Apply(ev)
			}
			done, err := r.CompleteDestroy(resource.CompleteDestroy{ResourceID: r.ID, Output: json.RawMessage(`{"skipped":"never created"}`), At: at})
			return append(begun, done...), err
		})
	case d.failedInRun(t, resource.PhaseDestroy):
		return &failure{t.node.Name, errors.New(s.Error)}, nil
	case s.Status == resource.StatusDestroying:
	case s.Status == resource.StatusRunning || s.Status == resource.StatusStarting || s.Status == resource.StatusStopping ||
		s.Status == resource.StatusUpdating ||
		s.Status == resource.StatusFailed && (s.FailedIn == resource.PhaseStart || s.FailedIn == resource.PhaseStop || s.FailedIn == resource.PhaseUpdate):
		// It may be running: stop it before destroying it.
		if f, err := o.stopOne(ctx, d, t); f != nil || err != nil {
			return f, err
		}
		return o.destroyOne(ctx, d, t)
	default: // creating, created, stopped, failed in create or destroy
		if err := o.decideResource(ctx, d, t, func(r resource.Resource) ([]domain.Event, error) {
			return r.BeginDestroy(resource.BeginDestroy{ResourceID: r.ID, At: o.cfg.Clock()})
		}); err != nil {
			return nil, err
		}
	}
	out, err := o.call(ctx, d, t, plugins.OpDestroy)
	f, err := o.record(ctx, d, t, err, func(r resource.Resource) ([]domain.Event, error) {
		return r.CompleteDestroy(resource.CompleteDestroy{ResourceID: r.ID, Output: out, At: o.cfg.Clock()})
	})
	if f != nil || err != nil {
		return f, err
	}
	return nil, o.unplace(ctx, d, t)
}
