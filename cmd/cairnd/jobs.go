package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"cairn/agent"
	"cairn/commands"
	"cairn/commands/access"
	"cairn/commands/jobs"
	"cairn/commands/nodes"
	"cairn/commands/schedules"
	"cairn/dispatch"
	"cairn/eventstore"
	"cairn/internal/retention"
	"cairn/internal/seal"
	"cairn/joblogs"
	"cairn/nodestats"
	"cairn/sal/catalog"
)

// jobConfig is the configuration of jobs, agents and their measurements.
type jobConfig struct {
	Lease             time.Duration
	HeartbeatInterval time.Duration
	MaxHeartbeats     int
	DisconnectAfter   time.Duration
	DownAfter         time.Duration
	LogRetention      time.Duration
	StatsRetention    time.Duration
	// LocalAgent is a cairn-agent executable to run next to the server,
	// enrolled to it: one command gives a working control plane with a
	// node to run jobs on.
	LocalAgent string
}

// defaultJobConfig is the configuration without flags.
func defaultJobConfig() jobConfig {
	return jobConfig{
		Lease: dispatch.DefaultLease, HeartbeatInterval: dispatch.DefaultHeartbeatInterval, MaxHeartbeats: dispatch.DefaultMaxHeartbeats,
		DisconnectAfter: dispatch.DefaultDisconnectAfter, DownAfter: dispatch.DefaultDownAfter,
		LogRetention: joblogs.DefaultRetention, StatsRetention: nodestats.DefaultRetention,
	}
}

func (c *jobConfig) bindFlags(fs *pflag.FlagSet) {
	d := defaultJobConfig()
	fs.DurationVar(&c.Lease, "job-lease", d.Lease,
		"how long an agent has to acknowledge a job before it goes back to the queue")
	fs.DurationVar(&c.HeartbeatInterval, "heartbeat-interval", d.HeartbeatInterval,
		"how often agents send a heartbeat (longer for a fleet over --max-heartbeats-per-second times it)")
	fs.IntVar(&c.MaxHeartbeats, "max-heartbeats-per-second", d.MaxHeartbeats,
		"the most heartbeats the whole fleet is asked to send a second: a larger fleet beats less often (a node holding a feed stays present regardless)")
	fs.DurationVar(&c.DisconnectAfter, "disconnect-after", d.DisconnectAfter,
		"grace period after which a silent node is marked disconnected")
	fs.DurationVar(&c.DownAfter, "down-after", d.DownAfter,
		"how long a node stays disconnected before it is marked down and its jobs are given up")
	fs.DurationVar(&c.LogRetention, "log-retention", d.LogRetention,
		"how long job output is kept (negative: forever)")
	fs.DurationVar(&c.StatsRetention, "stats-retention", d.StatsRetention,
		"how long node statistics are kept (negative: forever)")
	fs.StringVar(&c.LocalAgent, "local-agent", "",
		"path of a cairn-agent to run next to the server, enrolled to it (its files go in <data-dir>/agent)")
}

// recentJobStreams is how many job streams the job handlers remember, so
// that a job's lease, start and finish, moments apart, decide without
// reading it again. A fan-out to 10,000 nodes spawns that many children
// at once, remembered as they are written, and leases them over seconds:
// with room for fewer, most were forgotten before their lease. A child's
// history is under a kilobyte (its spec is shared with its parent's).
const recentJobStreams = 16384

// jobSide is the server side of jobs and agents: the job handlers, the
// dispatcher and the stores of job output and node statistics.
type jobSide struct {
	jobs       *jobs.Handlers
	schedules  *schedules.Handlers
	logs       *joblogs.Store
	stats      *nodestats.Store
	dispatcher *dispatch.Dispatcher
}

func newJobSide(store *eventstore.Store, pool *pgxpool.Pool, sealer *seal.Sealer, cfg jobConfig, owner dispatch.Owner, presence dispatch.Presence, log zerolog.Logger) (*jobSide, error) {
	validator, err := catalog.NewValidator()
	if err != nil {
		return nil, err
	}
	jobStreams := commands.NewStreamCache(store, recentJobStreams)
	js := &jobSide{
		jobs:      jobs.NewHandlers(jobStreams, time.Now, newID, validator, sealer),
		schedules: schedules.NewHandlers(store, time.Now, validator),
		stats:     nodestats.New(pool, time.Now),
	}
	js.logs = joblogs.New(pool, jobEnds{js})
	js.dispatcher, err = dispatch.New(dispatch.Deps{
		Store: store, Jobs: js.jobs, Nodes: nodes.NewHandlers(store, time.Now, newID),
		Access: access.NewHandlers(store, time.Now, newID, access.Options{}), Logs: js.logs, Stats: js.stats,
		Log:   log.With().Str("component", "dispatcher").Logger(),
		Owner: owner, Presence: presence, JobStreams: jobStreams,
	}, dispatch.Options{
		Lease: cfg.Lease, HeartbeatInterval: cfg.HeartbeatInterval, MaxHeartbeatsPerSecond: cfg.MaxHeartbeats, DisconnectAfter: cfg.DisconnectAfter,
		DownAfter: cfg.DownAfter,
	})
	if err != nil {
		return nil, err
	}
	return js, nil
}

// retention deletes job output and node statistics past their retention
// periods, every hour, until ctx ends.
func (js *jobSide) retention(ctx context.Context, cfg jobConfig, log zerolog.Logger) {
	retention.Run(ctx, log.With().Str("component", "retention").Logger(), time.Hour, time.Now,
		retention.Policy{What: "job output chunks", Keep: cfg.LogRetention, Purge: js.logs.Purge},
		retention.Policy{What: "node statistics samples", Keep: cfg.StatsRetention, Purge: js.stats.Purge},
	)
}

// jobEnds lets the job log ask the dispatcher whether a job has ended.
type jobEnds struct{ js *jobSide }

func (e jobEnds) JobEnded(ctx context.Context, id string) (bool, error) {
	return e.js.dispatcher.JobEnded(ctx, id)
}

// runLocalAgent runs the cairn-agent at path next to the server listening on
// addr, enrolling it on its first start, until ctx ends; then it stops the
// agent with SIGTERM (its jobs go on in their runners and are picked up on
// the next start).
func runLocalAgent(ctx context.Context, path, dataDir string, addr net.Addr, h *access.Handlers, log zerolog.Logger) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	agentDir := filepath.Join(dataDir, "agent")
	files := filepath.Join(dataDir, "agent-files")
	if err := os.MkdirAll(files, 0o755); err != nil {
		return fmt.Errorf("local agent: %w", err)
	}
	args := []string{"--server", "http://" + loopback(addr), "--data-dir", agentDir, "--file-root", files,
		"--label", "local=true"}
	env := os.Environ()
	if !agent.Enrolled(agentDir) {
		t, err := h.IssueJoinToken(ctx, commands.Meta{Actor: "cairnd"}, access.IssueJoinToken{
			Labels: map[string]string{"local": "true"}, TTL: 10 * time.Minute})
		if err != nil {
			return fmt.Errorf("local agent: issue its join token: %w", err)
		}
		// The environment, not the command line, so the token does not
		// show in the process list.
		env = append(env, "CAIRN_JOIN_TOKEN="+t.Token)
	}
	cmd := exec.Command(abs, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("local agent: start %s: %w", abs, err)
	}
	log.Info().Int("pid", cmd.Process.Pid).Str("data_dir", agentDir).Msg("local agent started")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return fmt.Errorf("local agent exited: %w", err)
	case <-ctx.Done():
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
	return nil
}

// loopback is the address to reach a listener from this machine.
func loopback(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return addr.String()
	}
	if tcp.IP == nil || tcp.IP.IsUnspecified() {
		return net.JoinHostPort("127.0.0.1", fmt.Sprint(tcp.Port))
	}
	return tcp.String()
}
