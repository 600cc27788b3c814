package agent

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"cairn/graph/client"
	"cairn/internal/bearer"
)

// Session is one node's line to the control plane, without the journal or
// the SAL: it keeps a feed of leases connected (a WebSocket subscription, or
// long polls), sends heartbeats at the interval the control plane asks for,
// and sends the node's reports, retrying passing troubles. An Agent runs
// one; a load driver runs thousands in one process to measure the control
// plane at the size of a fleet, with the very code agents use.
type Session struct {
	c         *client.Client
	nodeID    string
	transport string
	pollWait  time.Duration
	minBack   time.Duration
	maxBack   time.Duration
	log       zerolog.Logger
	onConnect func()

	mu          sync.Mutex
	cursor      string // of the last lease delivered
	heartbeat   time.Duration
	preferPoll  time.Time
	connectedAt time.Time
	// live is the feed's WebSocket while it is connected: reports and
	// heartbeats travel over it rather than as requests of their own.
	live *client.Subscription
}

// SessionConfig configures a Session. Server and Credential are required.
type SessionConfig struct {
	// Server is the control plane's URL, or several replicas' separated by
	// commas.
	Server string
	// Credential is the node credential enrollment returned.
	Credential string
	// Transport is auto (default), websocket or poll.
	Transport string
	// After resumes the feed after this cursor.
	After string
	// PollWait is how long one long poll waits (default 25 s); MinBackoff
	// and MaxBackoff bound the wait between reconnections (0.5 s, 30 s).
	PollWait   time.Duration
	MinBackoff time.Duration
	MaxBackoff time.Duration
	HTTPClient *http.Client
	Log        zerolog.Logger
	// Connected, when set, is called each time the feed is established.
	Connected func()
}

// NewSession checks the credential and builds a session for its node.
func NewSession(cfg SessionConfig) (*Session, error) {
	c, err := newClient(cfg.Server, cfg.HTTPClient)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	return newSession(c.WithToken(cfg.Credential), cfg)
}

func newSession(c *client.Client, cfg SessionConfig) (*Session, error) {
	var err error
	if cfg.Transport, err = transport(cfg.Transport); err != nil {
		return nil, err
	}
	id, _, err := bearer.Parse(bearer.APIToken, c.Token())
	nodeID, ok := strings.CutPrefix(id, bearer.NodeCredentialPrefix)
	if err != nil || !ok {
		return nil, errNotCredential
	}
	set := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&cfg.PollWait, defaultPollWait)
	set(&cfg.MinBackoff, defaultMinBackoff)
	set(&cfg.MaxBackoff, defaultMaxBackoff)
	return &Session{
		c: c, nodeID: nodeID, transport: cfg.Transport, pollWait: cfg.PollWait,
		minBack: cfg.MinBackoff, maxBack: cfg.MaxBackoff, log: cfg.Log,
		cursor: cfg.After, heartbeat: 10 * time.Second, onConnect: cfg.Connected,
	}, nil
}

var errNotCredential = errors.New("not a node credential")

// Defaults of the session's settings (and the agent's flags).
const (
	defaultPollWait   = 25 * time.Second
	defaultMinBackoff = 500 * time.Millisecond
	defaultMaxBackoff = 30 * time.Second
)

// transport checks a transport's name; empty is auto.
func transport(t string) (string, error) {
	switch t {
	case "":
		return TransportAuto, nil
	case TransportAuto, TransportWebSocket, TransportPoll:
		return t, nil
	}
	return "", fmt.Errorf("agent: transport %q: use auto, websocket or poll", t)
}

// NodeID is the node the session acts for.
func (s *Session) NodeID() string { return s.nodeID }

func (s *Session) backoff() *backoff { return &backoff{min: s.minBack, max: s.maxBack} }

// EnrollInput is what a node sends to enroll.
type EnrollInput struct {
	JoinToken string
	Hostname  string
	Labels    map[string]string
}

// Enroll enrolls a node with a join token at server and returns its
// credential, trying again while the control plane cannot be reached.
func Enroll(ctx context.Context, server string, hc *http.Client, in EnrollInput, log zerolog.Logger) (string, error) {
	c, err := newClient(server, hc)
	if err != nil {
		return "", fmt.Errorf("agent: %w", err)
	}
	return enroll(ctx, c, in, &backoff{min: defaultMinBackoff, max: defaultMaxBackoff}, log)
}

func enroll(ctx context.Context, c *client.Client, in EnrollInput, b *backoff, log zerolog.Logger) (string, error) {
	input := map[string]any{"joinToken": in.JoinToken, "hostname": in.Hostname}
	if len(in.Labels) > 0 {
		var ls []map[string]string
		for k, v := range in.Labels {
			ls = append(ls, map[string]string{"key": k, "value": v})
		}
		input["labels"] = ls
	}
	var out struct {
		Credential string `json:"credential"`
	}
	for {
		err := send(ctx, c, "Enroll", map[string]any{"input": input}, &out)
		if err == nil {
			return out.Credential, nil
		}
		if client.Permanent(err) {
			return "", fmt.Errorf("agent: enrollment refused: %w", err)
		}
		log.Warn().Err(err).Msg("cannot reach the control plane to enroll; trying again")
		if err := b.wait(ctx); err != nil {
			return "", err
		}
	}
}

// Follow keeps a feed connected, reconnecting with jittered backoff (to
// another replica when the client moved), and hands each lease to deliver.
// A lease whose deliver returned nil is not delivered again. It returns
// when ctx ends, deliver fails for good, or the credential is refused.
func (s *Session) Follow(ctx context.Context, deliver func(Lease) error) error {
	backoff := s.backoff()
	for ctx.Err() == nil {
		f := s.chooseFeed()
		s.mu.Lock()
		after := s.cursor
		s.mu.Unlock()
		connected := func() {
			s.mu.Lock()
			s.connectedAt = time.Now()
			s.mu.Unlock()
			s.log.Info().Str("transport", f.name()).Msg("connected to the control plane")
			if s.onConnect != nil {
				s.onConnect()
			}
		}
		fctx, stopFeed := context.WithCancel(ctx)
		go s.leaveWhenMoved(fctx, stopFeed)
		err := f.run(fctx, after, connected, func(l Lease) error {
			if err := deliver(l); err != nil {
				return err
			}
			if l.Cursor != "" {
				s.mu.Lock()
				s.cursor = l.Cursor
				s.mu.Unlock()
			}
			return nil
		})
		stopFeed()
		var de *client.DialError
		if errors.As(err, &de) && s.transport == TransportAuto && ctx.Err() == nil {
			s.log.Warn().Err(err).Msg("WebSocket unavailable; falling back to long polling")
			s.mu.Lock()
			s.preferPoll = time.Now().Add(5 * time.Minute)
			s.mu.Unlock()
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if unauthenticated(err) {
			return fmt.Errorf("agent: the control plane refused the node credential (was the node decommissioned?): %w", err)
		}
		s.mu.Lock()
		stable := !s.connectedAt.IsZero() && time.Since(s.connectedAt) > 30*time.Second
		s.connectedAt = time.Time{}
		s.mu.Unlock()
		if stable {
			backoff.reset()
		}
		s.log.Warn().Err(err).Str("transport", f.name()).Msg("disconnected from the control plane; reconnecting")
		if err := backoff.wait(ctx); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// leaveWhenMoved ends the feed (stop) once the client has moved to another
// replica — a heartbeat or report found this one without its database —
// so that the feed follows it rather than waiting on a replica that can
// no longer hear of leases.
func (s *Session) leaveWhenMoved(ctx context.Context, stop context.CancelFunc) {
	at := s.c.Endpoint()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if now := s.c.Endpoint(); now != at {
				s.log.Info().Str("from", at).Str("to", now).Msg("moving the feed to another replica")
				stop()
				return
			}
		}
	}
}

func (s *Session) chooseFeed() feed {
	s.mu.Lock()
	defer s.mu.Unlock()
	poll := &pollFeed{c: s.c, nodeID: s.nodeID, wait: s.pollWait}
	switch {
	case s.transport == TransportPoll:
		return poll
	case s.transport == TransportAuto && time.Now().Before(s.preferPoll):
		return poll
	}
	return &wsFeed{c: s.c, nodeID: s.nodeID, carry: s.carry}
}

// Heartbeats tells the control plane the node is alive and which jobs it
// runs (running), at the interval the control plane asks for, and hands
// cancel the jobs it says to stop (cancelled, or ended while the node was
// away). It returns when ctx ends, or with the error when the credential
// is refused.
func (s *Session) Heartbeats(ctx context.Context, running func() []string, cancel func(jobID string)) error {
	for beat := 0; ; beat++ {
		if beat > 0 {
			s.mu.Lock()
			every := s.heartbeat
			s.mu.Unlock()
			if err := sleep(ctx, heartbeatWait(every, beat == 1)); err != nil {
				return nil
			}
		}
		var out struct {
			IntervalSeconds int      `json:"intervalSeconds"`
			CancelJobIDs    []string `json:"cancelJobIds"`
		}
		input := map[string]any{"nodeId": s.nodeID, "runningJobIds": running()}
		if err := s.send(ctx, "Heartbeat", map[string]any{"input": input}, &out); err != nil {
			if unauthenticated(err) {
				return err
			}
			s.log.Debug().Err(err).Msg("heartbeat not delivered")
			continue
		}
		if out.IntervalSeconds > 0 {
			s.mu.Lock()
			s.heartbeat = time.Duration(out.IntervalSeconds) * time.Second
			s.mu.Unlock()
		}
		for _, id := range out.CancelJobIDs {
			cancel(id)
		}
	}
}

// heartbeatWait is the pause before a heartbeat. Agents that connected
// together (a fleet enrolled at once, or back after the server restarted)
// would otherwise beat together for ever, every one of them in the same
// second of each interval: the second heartbeat comes at a random point of
// the first interval, and the others within a tenth of the interval either
// side of it, so the fleet's heartbeats spread out and stay spread.
func heartbeatWait(every time.Duration, second bool) time.Duration {
	if every <= 0 {
		return every
	}
	if second {
		return time.Duration(rand.Int64N(int64(every))) + 1
	}
	return every*9/10 + time.Duration(rand.Int64N(int64(every/5)+1))
}

// Report sends one of the node's reports about a job (Acknowledge, Start,
// AppendLog, Finish: see Operations) with input, retrying passing troubles
// with backoff until it is stored or refused for good.
func (s *Session) Report(ctx context.Context, op string, input map[string]any) error {
	b := s.backoff()
	began := time.Now()
	for tries := 1; ; tries++ {
		err := s.send(ctx, op, map[string]any{"input": input}, nil)
		if err == nil || client.Permanent(err) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// A report that keeps failing holds its job up: say so where an
		// operator looks, the third time and every tenth after.
		ev := s.log.Debug()
		if tries%10 == 3 {
			ev = s.log.Warn().Int("tries", tries).Dur("for", time.Since(began).Round(time.Millisecond))
		}
		ev.Err(err).Any("job", input["jobId"]).Str("op", op).Str("server", s.c.Endpoint()).Msg("cannot deliver a report about a job; retrying")
		if err := b.wait(ctx); err != nil {
			return err
		}
	}
}

// liveReportTimeout bounds how long a report over the feed's WebSocket
// waits for its answer before it is sent over HTTP instead (a WebSocket
// that silent is taken for dead, and reconnected).
const liveReportTimeout = 30 * time.Second

// send runs one of the agent's operations over the feed's WebSocket when it
// is connected, and over HTTP otherwise. Each request over HTTP cost the
// control plane and the agent more than the operation itself: a fan-out's
// start and finish reports, and an idle fleet's heartbeats, were mostly
// that. A WebSocket that cannot carry the operation, or an answer that is
// a passing trouble (a replica without its database, say), sends it over
// HTTP at once, where the client moves to another replica: the operations
// carry command ids, so one applied already is not applied again.
func (s *Session) send(ctx context.Context, op string, vars map[string]any, out any) error {
	s.mu.Lock()
	live := s.live
	s.mu.Unlock()
	if live != nil {
		lctx, cancel := context.WithTimeout(ctx, liveReportTimeout)
		resp, err := live.Do(lctx, client.Request{Query: Operations[op], OperationName: op, Variables: vars})
		cancel()
		switch {
		case err == nil && len(resp.Errors) == 0:
			if err := resp.Field(out); err != nil {
				return fmt.Errorf("%s: %w", op, err)
			}
			return nil
		case err == nil && client.Permanent(resp.Errors):
			return fmt.Errorf("%s: %w", op, resp.Errors)
		case ctx.Err() != nil:
			return fmt.Errorf("%s: %w", op, ctx.Err())
		}
	}
	return send(ctx, s.c, op, vars, out)
}

// carry makes sub the WebSocket the session's operations travel over, until
// the returned func is called.
func (s *Session) carry(sub *client.Subscription) (stop func()) {
	s.mu.Lock()
	s.live = sub
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		if s.live == sub {
			s.live = nil
		}
		s.mu.Unlock()
	}
}

// CommandID names a report of a job's attempt, so a report sent again after
// a lost reply (or after a restart) is recognised, not doubled.
func (s *Session) CommandID(jobID string, attempt int, what string) string {
	return "agent:" + s.nodeID + ":" + jobID + ":" + strconv.Itoa(attempt) + ":" + what
}
