// Command cairn-bench measures Cairn against the targets of SPEC.md §10 on a
// private, durable PostgreSQL cluster and prints one JSON object as its last
// line. Ratios compare against a baseline measured in the same run, since
// shared machines are noisy.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"cairn/domain"
	"cairn/eventstore"
	"cairn/internal/database"
	"cairn/internal/pgcluster"
	"cairn/migrations"
)

type config struct {
	duration      time.Duration
	writers       int
	only          string
	appendWorkers int
	volatile      bool
	cpuProfile    string
	chart         string
	fleet         []int  // fleet sizes; empty: fleetSteps
	cairndDebug   string // --debug-listen for the cairnd the benchmarks start
	heapProfiles  string // folder to keep the served cairnd's profiles in
}

// env is what every benchmark gets: an owner pool, an app pool and a store.
type env struct {
	cfg   config
	admin *pgxpool.Pool
	app   *pgxpool.Pool
	store *eventstore.Store
	log   zerolog.Logger
}

type result map[string]any

func main() {
	var cfg config
	flag.DurationVar(&cfg.duration, "duration", 5*time.Second, "how long each throughput phase runs")
	flag.IntVar(&cfg.writers, "writers", 16, "concurrent writers")
	flag.StringVar(&cfg.only, "only", "", "run only the benchmarks whose names contain this (or one of these, comma separated)")
	flag.Func("fleet", "fleet sizes the fleet benchmark measures, comma separated (default 1000,2500,5000,10000)", func(v string) error {
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				return fmt.Errorf("fleet size %q: give a positive number", f)
			}
			cfg.fleet = append(cfg.fleet, n)
		}
		return nil
	})
	flag.StringVar(&cfg.cairndDebug, "cairnd-debug-listen", "", "serve the runtime profiles of the cairnd the benchmarks start on this address")
	flag.StringVar(&cfg.heapProfiles, "profiles", "", "keep in this folder the served cairnd's heap profiles where memory is measured (fleet-<agents>-enrolled.pb.gz, fleet-<agents>-connected.pb.gz, ...) and CPU profiles of the fleet's fan-outs (fleet-<agents>-fanout.cpu.pb.gz)")
	flag.StringVar(&cfg.chart, "chart", "", "write the fleet benchmark's chart (SVG) to this file")
	flag.BoolVar(&cfg.volatile, "volatile", false, "turn fsync off (measures CPU cost instead of disk flushes; not for reported figures)")
	flag.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.IntVar(&cfg.appendWorkers, "append-workers", 0, "event store batch transactions in flight (0: the store's default)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "cairn-bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg config) error {
	began := time.Now()
	if cfg.heapProfiles != "" {
		// Made now: a missing folder found by the first profile would end
		// the run minutes in.
		if err := os.MkdirAll(cfg.heapProfiles, 0o755); err != nil {
			return fmt.Errorf("the profiles folder: %w", err)
		}
	}
	log := zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr}).With().Timestamp().Logger().Level(zerolog.InfoLevel)
	cluster, err := pgcluster.Start(ctx, pgcluster.Options{Durable: !cfg.volatile})
	if err != nil {
		return err
	}
	defer cluster.Stop()
	if err := database.CreateDatabase(ctx, cluster.ConnString("postgres"), "bench", ""); err != nil {
		return err
	}
	url := cluster.URL("bench")
	admin, err := database.Open(ctx, url, database.Options{MaxConns: 40})
	if err != nil {
		return err
	}
	defer admin.Close()
	if _, err := migrations.Up(ctx, admin); err != nil {
		return err
	}
	app, err := database.Open(ctx, url, database.Options{Role: database.AppRole, MaxConns: 40})
	if err != nil {
		return err
	}
	defer app.Close()
	store := eventstore.New(app, benchRegistry(), eventstore.Options{Log: log, AppendWorkers: cfg.appendWorkers})
	defer store.Close()
	e := &env{cfg: cfg, admin: admin, app: app, store: store, log: log}

	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	out := result{}
	for _, b := range benchmarks {
		if cfg.only != "" && !slices.ContainsFunc(strings.Split(cfg.only, ","), func(o string) bool { return strings.Contains(b.name, o) }) {
			continue
		}
		start := time.Now()
		log.Info().Str("bench", b.name).Msg("running")
		r, err := b.run(ctx, e)
		if err != nil {
			return fmt.Errorf("%s: %w", b.name, err)
		}
		for k, v := range r {
			out[k] = v
		}
		log.Info().Str("bench", b.name).Dur("took", time.Since(start)).Interface("result", r).Msg("done")
	}
	// The whole run, the database's start included (not the build before
	// it): what SPEC's bound on make bench's time is checked against.
	out["bench_run_seconds"] = round(time.Since(began).Seconds(), 0)
	line, err := json.Marshal(out) // keys sorted
	if err != nil {
		return err
	}
	fmt.Println(string(line))
	return nil
}

type benchmark struct {
	name string
	run  func(context.Context, *env) (result, error)
}

// benchmarks run in order: later ones read what earlier ones wrote.
var benchmarks = []benchmark{
	{"append", benchAppend},
	{"append10", benchAppend10},
	{"catchup", benchCatchUp},
	{"consumer_group", benchConsumerGroup},
	{"commit_to_handler", benchCommitToHandler},
	// Before deploy_services: a pass must see its own 1,000 services only,
	// not those the deploy benchmark leaves registered on a plugin gone.
	{"reconcile", benchReconcile},
	{"deploy_services", benchDeploy},
	{"rebuild", benchRebuild}, {"projection_lag", benchProjectionLag}, {"export", benchExport},
	{"dispatch", benchDispatch}, {"fanout", benchFanOut}, {"agent_connections", benchConnections},
	{"graphql", benchGraphQL},
	{"subscribers_server", benchServerSubscribers},
	{"soak", benchSoak},
	{"replicas", benchReplicas},
	{"fleet", benchFleet},
	{"placement", benchPlacement},
	{"terraform", benchTerraform},
	{"blueprint", benchBlueprint},
	{"heal", benchHeal},
}

// benchStreamType is the stream type of the benchmarks' own events: not
// one Cairn follows, so the dispatcher and the scheduler of the benchmarks
// after them do not read (and log as unreadable) hundreds of thousands of
// them, as they did while these were "node" streams.
const benchStreamType = "bench_node"

type benchEvent struct {
	Seq    int64  `json:"seq"`
	Node   string `json:"node"`
	Status string `json:"status"`
	SentAt int64  `json:"sentAt,omitempty"`
}

func (benchEvent) EventType() string { return "bench.node_reported" }

func benchRegistry() *domain.Registry {
	r := domain.NewRegistry()
	domain.Register[benchEvent](r, 1)
	return r
}

func round(v float64, digits int) float64 {
	p := 1.0
	for range digits {
		p *= 10
	}
	return float64(int64(v*p+0.5)) / p
}

// median is the middle of xs (the upper middle of an even count); xs is
// sorted in place.
func median(xs []float64) float64 {
	slices.Sort(xs)
	return xs[len(xs)/2]
}
