package projections

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"cairn/eventstore"
)

// Options tune a Runner. The zero value is usable.
type Options struct {
	Log zerolog.Logger
	// ReadBatch is how many events are read from the log at a time
	// (default 2,000).
	ReadBatch int
	// MaxBatch caps the events one transaction applies (default 5,000).
	// While catching up, reads are gathered up to it; at the head each read
	// is applied at once.
	MaxBatch int
	// MaxAttempts is how often an event that fails alone is tried before it
	// is parked (default 5).
	MaxAttempts int
	// Backoff is the first wait between attempts; it doubles up to
	// MaxBackoff (defaults 100 ms and 5 s).
	Backoff    time.Duration
	MaxBackoff time.Duration
	// PollInterval is how often an idle worker looks at the log when no
	// notification wakes it (default 1 s).
	PollInterval time.Duration
	// ControlInterval is how often the runner looks for rebuilds requested
	// by other processes (`cairnd projections rebuild`) (default 1 s).
	ControlInterval time.Duration
	// SaveInterval bounds how long a checkpoint that only moved over events
	// of no concern to a projection stays unsaved (default 1 s).
	SaveInterval time.Duration
	// CachePages bounds the pages of decoded events shared between
	// workers (default 32).
	CachePages int
	// Views are made over the stable read views (the analytics schema).
	Views []View
}

func (o *Options) defaults() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.ReadBatch, 2000)
	def(&o.MaxBatch, 5000)
	def(&o.MaxAttempts, 5)
	def(&o.CachePages, 32)
	defDur(&o.Backoff, 100*time.Millisecond)
	defDur(&o.MaxBackoff, 5*time.Second)
	defDur(&o.PollInterval, time.Second)
	defDur(&o.ControlInterval, time.Second)
	defDur(&o.SaveInterval, time.Second)
}

// Runner runs projections. Register them, then Run; Status, WaitFor,
// Rebuild and Parked may be called from any goroutine. It implements
// prometheus.Collector (see Describe).
type Runner struct {
	store Log
	pool  *pgxpool.Pool
	opts  Options
	log   zerolog.Logger
	src   *source

	projs  []Projection
	byName map[string]Projection

	mu      sync.Mutex
	running bool
	ctx     context.Context
	workers map[string][]*worker // by projection: its live and building workers here
	// frontier is the cursor every projection's live build here has
	// applied; waiting holds the WaitFor calls beyond it.
	frontier eventstore.Cursor
	waiting  waiters
	// generation moves after every change to a read model here (see
	// Generation).
	generation atomic.Uint64
	checks     chan struct{} // bounds WaitFor's concurrent cursor lookups
	ready      chan struct{}
	kick       chan struct{}
	wg         sync.WaitGroup

	// afterCommit, for tests, runs after each committed batch.
	afterCommit func(name string, c eventstore.Cursor)
}

// NewRunner returns a runner over the log. Read models are written through
// pool, which acts as the application role. A pool whose sessions are named
// eventstore.ReadModelAppName lets readers of the log, the projections
// included, go on while a batch is being applied instead of waiting for its
// transaction to end: what keeps projection lag low under load.
func NewRunner(store Log, pool *pgxpool.Pool, opts Options) *Runner {
	opts.defaults()
	return &Runner{
		store: store, pool: pool, opts: opts, log: opts.Log,
		src:    newSource(store, opts.ReadBatch, opts.CachePages),
		byName: map[string]Projection{}, workers: map[string][]*worker{},
		ready: make(chan struct{}), kick: make(chan struct{}, 1), checks: make(chan struct{}, 4),
	}
}

// Register adds projections. It must be called before Run.
func (r *Runner) Register(ps ...Projection) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running {
		return &RegistrationError{Name: ps[0].Name(), Reason: "register projections before Run"}
	}
	for _, p := range ps {
		name := p.Name()
		switch {
		case !validName(name):
			return &RegistrationError{Name: name, Reason: "a name is 1 to 30 lower-case letters, digits and underscores"}
		case r.byName[name] != nil:
			return &RegistrationError{Name: name, Reason: "registered twice"}
		case p.Version() < 1:
			return &RegistrationError{Name: name, Reason: "versions start at 1"}
		case len(p.Tables()) == 0:
			return &RegistrationError{Name: name, Reason: "it names no tables"}
		}
		for _, t := range p.Tables() {
			for _, other := range r.projs {
				if slices.Contains(other.Tables(), t) {
					return &RegistrationError{Name: name, Reason: fmt.Sprintf("table %q belongs to projection %q", t, other.Name())}
				}
			}
		}
		r.projs = append(r.projs, p)
		r.byName[name] = p
	}
	return nil
}

func validName(s string) bool {
	if len(s) == 0 || len(s) > 30 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// Names lists the registered projections.
func (r *Runner) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.projs))
	for _, p := range r.projs {
		out = append(out, p.Name())
	}
	sort.Strings(out)
	return out
}

// Ready is closed once every projection has its tables and views and its
// workers are running.
func (r *Runner) Ready() <-chan struct{} { return r.ready }

// Run sets up every projection (first builds, rebuilds for new versions,
// the derived views) and applies events until ctx ends. It returns nil after
// ctx ends, or the error that kept it from setting up.
func (r *Runner) Run(ctx context.Context) error {
	r.mu.Lock()
	if r.running {
		r.mu.Unlock()
		return errors.New("projections: Run called twice")
	}
	r.running, r.ctx = true, ctx
	r.mu.Unlock()
	defer r.wg.Wait()

	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for ctx.Err() == nil {
			if err := r.src.feed(ctx); err != nil && ctx.Err() == nil {
				r.log.Warn().Err(err).Msg("projection feed stopped; workers poll until it is back")
				_ = sleep(ctx, r.opts.MaxBackoff)
			}
		}
	}()

	if err := r.setup(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	r.progressed(true)
	close(r.ready)
	tick := time.NewTicker(r.opts.ControlInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-r.kick:
		}
		if err := r.control(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn().Err(err).Msg("projection control failed; retrying")
		}
	}
}

// setup drops tables of retired builds left behind, makes sure every
// projection has a live build (and a building one when its version changed),
// starts their workers and makes the derived views.
func (r *Runner) setup(ctx context.Context) error {
	olds, err := retiredWithTables(ctx, r.pool)
	if err != nil {
		return err
	}
	for _, b := range olds {
		if err := dropTables(ctx, r.pool, b); err != nil {
			r.log.Warn().Err(err).Msg("could not drop tables of a retired projection build")
		}
	}
	for _, p := range r.projs {
		if err := r.reconcile(ctx, p); err != nil {
			return err
		}
	}
	return pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		have, err := readViews(ctx, tx, ReadSchema)
		if err != nil {
			return err
		}
		return createViews(ctx, tx, r.opts.Views, ReadSchema, "", have)
	})
}

// reconcile brings one projection's builds in line with the code and with
// rebuild requests, then runs a worker for each build this process can run.
func (r *Runner) reconcile(ctx context.Context, p Projection) error {
	var run, retire []buildRow
	err := pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		run, retire = nil, nil
		if err := lockProjection(ctx, tx, p.Name()); err != nil {
			return err
		}
		rows, err := activeBuilds(ctx, tx, p.Name(), true)
		if err != nil {
			return err
		}
		var live, building *buildRow
		for i := range rows {
			if rows[i].Status == StateLive {
				live = &rows[i]
			} else {
				building = &rows[i]
			}
		}
		// A rebuild started by another version of the code cannot be
		// finished by this one.
		if building != nil && building.Version != p.Version() {
			if err := retireBuild(ctx, tx, *building); err != nil {
				return err
			}
			retire = append(retire, *building)
			building = nil
		}
		if live == nil {
			b, err := insertBuild(ctx, tx, p, StateLive)
			if err != nil {
				return err
			}
			if _, err := pointViews(ctx, tx, b, nil); err != nil {
				return err
			}
			live = &b
		}
		if building == nil && (live.Version != p.Version() || live.RebuildRequested) {
			b, err := insertBuild(ctx, tx, p, StateBuilding)
			if err != nil {
				return err
			}
			building = &b
			r.log.Info().Str("projection", p.Name()).Int("build", b.Build).Int("version", b.Version).
				Msg("rebuilding projection from the start of the log; the current tables serve until it has caught up")
		}
		if live.RebuildRequested {
			if _, err := tx.Exec(ctx, `UPDATE projection_checkpoints SET rebuild_requested_at = NULL WHERE name = $1 AND build = $2`,
				live.Name, live.Build); err != nil {
				return fmt.Errorf("clear rebuild request of %q: %w", live.Name, err)
			}
		}
		if live.Version == p.Version() {
			run = append(run, *live)
		}
		if building != nil {
			run = append(run, *building)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("set up projection %q: %w", p.Name(), err)
	}
	for _, b := range retire {
		if err := dropTables(ctx, r.pool, b); err != nil {
			r.log.Warn().Err(err).Msg("could not drop tables of an abandoned projection build")
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	active := map[int]bool{}
	for _, b := range run {
		active[b.Build] = true
		if r.worker(p.Name(), b.Build) == nil {
			r.startWorker(p, b)
		}
	}
	for _, w := range r.workers[p.Name()] {
		if !active[w.build] {
			w.cancel()
		}
	}
	return nil
}

func retireBuild(ctx context.Context, tx pgx.Tx, b buildRow) error {
	_, err := tx.Exec(ctx, `UPDATE projection_checkpoints SET status = 'retired', retired_at = now(), updated_at = now()
		WHERE name = $1 AND build = $2`, b.Name, b.Build)
	if err != nil {
		return fmt.Errorf("retire build %d of %q: %w", b.Build, b.Name, err)
	}
	return nil
}

// worker returns this process's worker of a build. Callers hold mu.
func (r *Runner) worker(name string, build int) *worker {
	for _, w := range r.workers[name] {
		if w.build == build {
			return w
		}
	}
	return nil
}

// startWorker runs a build's worker until it is retired or the runner
// stops. Callers hold mu.
func (r *Runner) startWorker(p Projection, b buildRow) {
	w := newWorker(r, p, b)
	ctx, cancel := context.WithCancel(r.ctx)
	w.cancel = cancel
	r.workers[p.Name()] = append(r.workers[p.Name()], w)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer close(w.done)
		defer cancel()
		err := w.run(ctx)
		r.mu.Lock()
		r.workers[w.name] = slices.DeleteFunc(r.workers[w.name], func(o *worker) bool { return o == w })
		r.mu.Unlock()
		if err != nil && !errors.Is(err, errSuperseded) && ctx.Err() == nil {
			// The control loop starts it again.
			r.log.Error().Err(err).Str("projection", w.name).Int("build", w.build).Msg("projection worker stopped; restarting")
		}
		r.progressed(true)
	}()
}

// control starts builds requested elsewhere, starts workers for builds that
// have none here, and stops workers whose builds were retired elsewhere.
func (r *Runner) control(ctx context.Context) error {
	rows, err := activeBuilds(ctx, r.pool, "", false)
	if err != nil {
		return err
	}
	stale := map[string]bool{}
	r.mu.Lock()
	for _, b := range rows {
		p := r.byName[b.Name]
		if p == nil {
			continue
		}
		w := r.worker(b.Name, b.Build)
		runnable := b.Status == StateBuilding || b.Version == p.Version()
		if b.RebuildRequested || runnable && w == nil || w != nil && w.snapshot().state != b.Status {
			stale[b.Name] = true
		}
	}
	for name, ws := range r.workers {
		for _, w := range ws {
			if !slices.ContainsFunc(rows, func(b buildRow) bool { return b.Name == name && b.Build == w.build }) {
				stale[name] = true
			}
		}
	}
	r.mu.Unlock()
	for name := range stale {
		if err := r.reconcile(ctx, r.byName[name]); err != nil {
			return err
		}
	}
	return nil
}

// switched is called by a worker whose build just became live: the old
// build's worker stops and its tables are dropped.
func (r *Runner) switched(w *worker, old *buildRow) {
	r.log.Info().Str("projection", w.name).Int("build", w.build).Msg("projection rebuilt: reads now use the new tables")
	if old == nil {
		return
	}
	r.mu.Lock()
	prev := r.worker(old.Name, old.Build)
	if prev != nil {
		prev.cancel()
	}
	r.mu.Unlock()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		if prev != nil {
			<-prev.done
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := dropTables(ctx, r.pool, *old); err != nil {
			r.log.Warn().Err(err).Msg("could not drop the old tables of a rebuilt projection; the next start drops them")
		}
	}()
}

// Generation changes after every batch a projection of this runner commits
// that may change a read model, and when the runner becomes ready, a worker
// stops or a worker finds another process applied a batch: an answer
// computed from the read models at one generation is still right while the
// generation has not moved, except for a batch another process applied that
// this runner's workers have not met yet. Zero before the runner is ready.
func (r *Runner) Generation() uint64 {
	select {
	case <-r.ready:
		return r.generation.Load()
	default:
		return 0
	}
}

// progressed moves the frontier and releases the WaitFor calls it
// satisfies. changed says a read model may have changed, which moves the
// generation; a worker that only passed events of no concern, or saved its
// place, changed nothing, and moving the generation then would empty the
// answer cache: each idle worker's poll did, every second, and each time
// the queries arriving together all missed it and ran at once.
func (r *Runner) progressed(changed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// Before the waiters are released: a caller that waited for its write
	// sees a new generation.
	if changed {
		r.generation.Add(1)
	}
	r.frontier = r.appliedByAll()
	r.waiting.release(r.frontier)
}

// readViews lists the views in a schema.
func readViews(ctx context.Context, q querier, schema string) ([]string, error) {
	rows, err := q.Query(ctx, `SELECT table_name FROM information_schema.views WHERE table_schema = $1`, schema)
	if err != nil {
		return nil, fmt.Errorf("list views of %s: %w", schema, err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list views of %s: %w", schema, err)
	}
	return names, nil
}
