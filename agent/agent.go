// Package agent is cairn-agent's runtime: it enrolls the node with a join
// token, keeps the node credential in its data directory, connects out to
// the control plane (a GraphQL subscription over WebSocket, or long polls
// over plain HTTP when WebSockets are blocked), and runs the jobs leased to
// the node through the SAL.
//
// Every job the agent receives is journaled in the data directory before
// anything else happens to it, and is run by a separate runner process that
// outlives the agent (see runner.go). Output is spooled to disk and shipped
// in order; the result is reported once every line was stored. So an agent
// that is killed, a network that fails or a control plane that restarts
// loses no output and runs no job twice: the agent picks its jobs up from
// the data directory and the control plane's feed resumes from the cursor of
// the last lease received.
package agent

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"cairn/graph/client"
	"cairn/sal"
)

// Transports.
const (
	TransportAuto      = "auto"
	TransportWebSocket = "websocket"
	TransportPoll      = "poll"
)

// Config configures an agent. Server and DataDir are required; the rest
// have defaults.
type Config struct {
	// Server is the control plane's base URL, e.g. http://cairn.example:8080.
	Server string
	// JoinToken enrolls the node when the data directory holds no
	// credential yet; it is ignored afterwards.
	JoinToken string
	// DataDir holds the credential, the cursor and the jobs' journal.
	DataDir string
	// Hostname and Labels are sent at enrollment; Hostname defaults to the
	// machine's.
	Hostname string
	Labels   map[string]string
	// Transport is auto (WebSocket, falling back to long polls when the
	// WebSocket cannot be opened), websocket or poll.
	Transport string
	// FileRoots, WorkDir and ScriptDir configure the SAL jobs run through.
	FileRoots []string
	WorkDir   string
	ScriptDir string
	// StatsInterval is how often statistics are sampled; StatsBatch how
	// many samples go in one report. FactsInterval is how often facts are
	// looked at (they are sent only when they changed).
	StatsInterval time.Duration
	StatsBatch    int
	FactsInterval time.Duration
	// PollWait is how long one long poll waits for a job.
	PollWait time.Duration
	// MinBackoff and MaxBackoff bound the jittered exponential wait
	// between reconnection attempts.
	MinBackoff time.Duration
	MaxBackoff time.Duration
	// JobRetention is how long the journal of a finished job is kept.
	JobRetention time.Duration
	// RunnerCommand starts a job's runner: the program and its arguments,
	// to which the job's directory is appended. Default: this executable
	// with "run-job" (cairn-agent's hidden subcommand calling RunJob).
	RunnerCommand []string
	HTTPClient    *http.Client
	Log           zerolog.Logger
}

func (c *Config) defaults() error {
	if c.Server == "" {
		return errors.New("agent: the control plane's URL is required (--server)")
	}
	if c.DataDir == "" {
		return errors.New("agent: a data directory is required (--data-dir)")
	}
	var err error
	if c.Transport, err = transport(c.Transport); err != nil {
		return err
	}
	if c.Hostname == "" {
		h, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("agent: hostname: %w", err)
		}
		c.Hostname = h
	}
	set := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&c.StatsInterval, 10*time.Second)
	set(&c.FactsInterval, 5*time.Minute)
	set(&c.PollWait, defaultPollWait)
	set(&c.MinBackoff, defaultMinBackoff)
	set(&c.MaxBackoff, defaultMaxBackoff)
	set(&c.JobRetention, 7*24*time.Hour)
	if c.StatsBatch <= 0 {
		c.StatsBatch = 6
	}
	if len(c.RunnerCommand) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("agent: find the agent's executable for the job runner: %w", err)
		}
		c.RunnerCommand = []string{exe, "run-job"}
	}
	return nil
}

// Agent runs one node's jobs.
type Agent struct {
	cfg    Config
	log    zerolog.Logger
	c      *client.Client
	sys    *sal.System
	nodeID string
	jobs   string         // the journal directory
	here   sync.WaitGroup // jobs run in the agent's own process (runHere)

	sess *Session // set by credential

	mu     sync.Mutex
	active map[string]*localJob // by job directory name
	cursor string               // the cursor kept in the data directory
}

// File names in the data directory.
const (
	credentialFile = "credential"
	cursorFile     = "cursor"
	jobsDir        = "jobs"
)

// Enrolled reports whether dataDir holds a node credential.
func Enrolled(dataDir string) bool {
	_, err := os.Stat(filepath.Join(dataDir, credentialFile))
	return err == nil
}

// New checks the configuration and builds the agent; Run starts it.
func New(cfg Config) (*Agent, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	c, err := newClient(cfg.Server, cfg.HTTPClient)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	for _, r := range cfg.FileRoots {
		if err := os.MkdirAll(r, 0o755); err != nil {
			return nil, fmt.Errorf("agent: file root: %w", err)
		}
	}
	sys, err := sal.New(sal.Config{FileRoots: cfg.FileRoots, WorkDir: cfg.WorkDir, ScriptDir: cfg.ScriptDir})
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	return &Agent{
		cfg: cfg, log: cfg.Log, c: c, sys: sys, jobs: filepath.Join(cfg.DataDir, jobsDir),
		active: map[string]*localJob{},
	}, nil
}

// NodeID is the node the agent acts for, once Run has enrolled it.
func (a *Agent) NodeID() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.nodeID
}

// Run enrolls the node if needed, then runs jobs until ctx ends. It returns
// early only when it cannot go on: enrollment refused, the credential
// revoked (the node was decommissioned), the data directory unusable.
// Jobs still running when it returns go on in their runners; the next Run
// picks them up.
func (a *Agent) Run(ctx context.Context) error {
	if err := os.MkdirAll(a.jobs, 0o700); err != nil {
		return fmt.Errorf("agent: data directory: %w", err)
	}
	if err := os.Chmod(a.cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("agent: data directory: %w", err)
	}
	if b, err := os.ReadFile(filepath.Join(a.cfg.DataDir, cursorFile)); err == nil {
		a.cursor = strings.TrimSpace(string(b))
	}
	if err := a.credential(ctx); err != nil {
		return err
	}
	a.log.Info().Str("node", a.nodeID).Str("server", a.cfg.Server).Msg("agent started")

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer a.stopSupervised()
	var wg sync.WaitGroup
	defer wg.Wait()
	if err := a.recover(ctx, &wg); err != nil {
		return err
	}
	fatal := make(chan error, 1)
	stop := func(err error) {
		select {
		case fatal <- err:
		default:
		}
		cancel()
	}
	for _, loop := range []func(context.Context) error{a.heartbeats, a.facts, a.stats, a.collect} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := loop(ctx); err != nil && ctx.Err() == nil {
				stop(err)
			}
		}()
	}
	err := a.follow(ctx, &wg)
	cancel()
	select {
	case ferr := <-fatal:
		return fmt.Errorf("agent: %w", ferr)
	default:
	}
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// credential loads the node credential, or enrolls with the join token,
// and opens the node's session.
func (a *Agent) credential(ctx context.Context) error {
	path := filepath.Join(a.cfg.DataDir, credentialFile)
	b, err := os.ReadFile(path)
	var cred string
	enrolled := false
	switch {
	case err == nil:
		cred = strings.TrimSpace(string(b))
	case !os.IsNotExist(err):
		return fmt.Errorf("agent: read the credential: %w", err)
	case a.cfg.JoinToken == "":
		return fmt.Errorf("agent: %s holds no credential: enroll the node with --join-token (ask an operator: cairn nodes join-token)", a.cfg.DataDir)
	default:
		in := EnrollInput{JoinToken: a.cfg.JoinToken, Hostname: a.cfg.Hostname, Labels: a.cfg.Labels}
		if cred, err = enroll(ctx, a.c, in, a.backoff(), a.log); err != nil {
			return err
		}
		if err := writeAtomic(path, []byte(cred+"\n"), 0o600); err != nil {
			return fmt.Errorf("agent: keep the credential: %w", err)
		}
		enrolled = true
	}
	sess, err := newSession(a.c.WithToken(cred), SessionConfig{
		Transport: a.cfg.Transport, After: a.cursor, PollWait: a.cfg.PollWait,
		MinBackoff: a.cfg.MinBackoff, MaxBackoff: a.cfg.MaxBackoff, Log: a.log,
	})
	if errors.Is(err, errNotCredential) {
		return fmt.Errorf("agent: %s is not a node credential; remove it and enroll again with a new join token", path)
	}
	if err != nil {
		return err
	}
	a.mu.Lock() // NodeID may be asked meanwhile
	a.sess, a.c, a.nodeID = sess, sess.c, sess.nodeID
	a.mu.Unlock()
	if enrolled {
		a.log.Info().Str("node", a.nodeID).Msg("node enrolled; its credential is in the data directory")
	}
	return nil
}

// follow keeps the session's feed connected and hands each lease to receive.
func (a *Agent) follow(ctx context.Context, wg *sync.WaitGroup) error {
	return a.sess.Follow(ctx, func(l Lease) error { return a.receive(ctx, wg, l) })
}

// saveCursor remembers the cursor of the last lease received.
func (a *Agent) saveCursor(cursor string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if cursor == "" || cursor == a.cursor {
		return nil
	}
	if err := writeAtomic(filepath.Join(a.cfg.DataDir, cursorFile), []byte(cursor+"\n"), 0o600); err != nil {
		return err
	}
	a.cursor = cursor
	return nil
}

// backoff is a jittered exponential wait.
type backoff struct {
	min, max time.Duration
	n        int
}

func (a *Agent) backoff() *backoff { return &backoff{min: a.cfg.MinBackoff, max: a.cfg.MaxBackoff} }

func (b *backoff) reset() { b.n = 0 }

func (b *backoff) next() time.Duration {
	d := b.min << min(b.n, 20)
	if d <= 0 || d > b.max {
		d = b.max
	}
	b.n++
	// Full jitter over the upper half, so a fleet that lost the control
	// plane together does not come back in lockstep.
	return d/2 + rand.N(d/2+1)
}

func (b *backoff) wait(ctx context.Context) error {
	t := time.NewTimer(b.next())
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
