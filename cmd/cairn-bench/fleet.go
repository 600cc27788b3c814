package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"cairn/agent"
	"cairn/graph/client"
)

// The fleet figures of SPEC §10, with real agents: cairnd runs as its own
// process, as operators run it, and a load driver in this process runs one
// agent.Session per node (the code cairn-agent connects with: enrollment by
// join token, the feed of leases, heartbeats at the interval the server
// asks for, and the reports of a job's acknowledgement, start and result).
// One agent in fleetPollShare follows its feed by long polling, the others
// over a WebSocket. The driver does not run the jobs it is given: it reports them
// done, so what is measured is the control plane. At each fleet size:
//
//   - server_kib_per_agent_connection_N: cairnd's heap in use and stacks
//     after a collection with the N agents connected and idle, less the same
//     with them enrolled but not connected, per agent (its resident set is
//     server_rss_mib_N_agents);
//   - idle_cpu_percent_N_agents: cairnd's CPU time over a window with the N
//     agents idle (heartbeating), as a share of one core;
//   - fanout_N_real_agents_s: one job on every node (mode ALL) until the
//     fan-out is recorded complete, every child's result stored. Timed is
//     the second such fan-out; fanout_first_N_real_agents_s is the first,
//     which meets the heap as the collections that read it left it: the
//     runtime gave its free memory back to the system then, and the
//     fan-out faults it in again page by page (about 140,000 pages at
//     10,000 agents, 13 to 19 µs each on a 2-core VM). A running cairnd
//     is never made to collect so (it gives memory back only once quiet,
//     which a server with thousands of agents never is), and its heap
//     keeps the room its last burst took;
//   - dispatch_p99_ms_N_agents: a job submitted for one node until that
//     node's agent receives its lease, with all N connected.
var fleetSteps = []int{1000, 2500, 5000, 10000}

const (
	// fleetFanOutProfile is how much of each fan-out -profiles records.
	fleetFanOutProfile   = 15 * time.Second
	fleetDispatchSamples = 100
	// fleetIdleWindow is the idle window of the largest step, whose figure
	// is the target; the smaller steps, drawn on the chart, take half.
	fleetIdleWindow = 10 * time.Second
	// fleetStartSpread is how long the agents of a step take to start.
	// Started over 3 s, the first heartbeats came in a burst with the
	// connections, and each agent held 2 to 3 KiB more of the server's
	// memory (stacks grown and spans half used in the burst).
	fleetStartSpread = 10 * time.Second
)

// fleetDriver runs the agents' sessions and records what they receive.
type fleetDriver struct {
	url       string
	cairndPID int
	admin     *client.Client
	hc        *http.Client
	log       zerolog.Logger
	// issuers create join tokens, and enrollHC carries the enrollments,
	// each from a loopback address of its own: a real fleet's nodes enroll
	// from many addresses, and the server's request quotas (per token, and
	// per address for requests without one) would otherwise make one
	// driver's 10,000 enrollments wait on them.
	issuers  []*client.Client
	enrollHC *http.Client

	connected atomic.Int64
	finished  atomic.Int64
	// leased counts the leases received, and firstLease and lastLease say
	// when the first since firstLease was zeroed and the last came, and
	// lastResult when the last result was stored (unix nanoseconds): the
	// fan-out's timeline.
	leased     atomic.Int64
	firstLease atomic.Int64
	lastLease  atomic.Int64
	lastResult atomic.Int64
	errs       chan error

	// pollers counts the sessions that follow their feed by long polling.
	pollers int

	mu       sync.Mutex
	sessions []*agent.Session
	waiting  map[string]chan time.Time // by node id: a dispatch sample
}

func benchFleet(ctx context.Context, e *env) (result, error) {
	limit := raiseFileLimit()
	// The driver holds every agent's session, and its collections scan
	// them all: CPU taken, on this one machine, from the cairnd and the
	// PostgreSQL being measured, which on a real fleet the nodes spend.
	// Collecting once the heap is four times its live size, not twice,
	// makes a third as many collections.
	defer debug.SetGCPercent(debug.SetGCPercent(fleetDriverGCPercent))
	work, err := os.MkdirTemp("", "cairn-bench-fleet-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	srv, err := startCairnd(ctx, e, work, "bench_fleet", nil)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	d := &fleetDriver{
		url:       srv.url,
		cairndPID: srv.pid,
		admin:     client.New(srv.url, srv.token, nil),
		log:       e.log,
		enrollHC:  fromManyAddresses(),
		// Requests (heartbeats, reports) share connections; each feed's
		// WebSocket is a connection of its own, as on real nodes.
		hc:      &http.Client{Timeout: 90 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute}},
		errs:    make(chan error, 1),
		waiting: map[string]chan time.Time{},
	}
	issuers, err := apiTokens(ctx, d.admin, fleetIssuers)
	if err != nil {
		return nil, err
	}
	for _, token := range issuers {
		d.issuers = append(d.issuers, client.New(srv.url, token, nil))
	}
	runCtx, stopAgents := context.WithCancel(ctx)
	defer stopAgents()

	out := result{}
	status := fmt.Sprintf("/proc/%d/status", srv.pid)
	var series []fleetPoint
	steps := fleetSteps
	if len(e.cfg.fleet) > 0 {
		steps = e.cfg.fleet
	}
	for _, n := range steps {
		// Each agent holds a WebSocket here and one in cairnd, and the
		// driver's requests some more: leave room for the database.
		if need := uint64(n) + 2000; limit < need {
			out["fleet_not_reached"] = n
			out["fleet_not_reached_why"] = fmt.Sprintf("file descriptor limit %d; %d needed", limit, need)
			break
		}
		have := len(d.sessions)
		if err := d.enroll(ctx, n-have); err != nil {
			return nil, fmt.Errorf("enroll %d agents: %w", n-have, err)
		}
		before, err := quietMemory(ctx, srv, fmt.Sprintf("fleet-%d-enrolled", n))
		if err != nil {
			return nil, err
		}
		if err := d.connect(runCtx, have, n); err != nil {
			return nil, fmt.Errorf("connect %d agents: %w", n, err)
		}
		if err := d.waitOnline(ctx); err != nil {
			return nil, err
		}
		held, err := quietMemory(ctx, srv, fmt.Sprintf("fleet-%d-connected", n))
		if err != nil {
			return nil, err
		}
		rss, err := rssOf(status)
		if err != nil {
			return nil, err
		}
		p := fleetPoint{agents: n}
		// What this step's agents cost, added to what the earlier steps'
		// cost, over all agents now connected.
		var prev float64
		if len(series) > 0 {
			last := series[len(series)-1]
			prev = last.kibPerAgent * float64(last.agents)
		}
		p.kibPerAgent = (prev + float64(held.total()-before.total())/1024) / float64(n)
		spans, objects, stacks := held.perEach(before, n-have)
		e.log.Info().Int("agents", n).Float64("heap_spans_kib", spans).Float64("live_objects_kib", objects).
			Float64("stacks_kib", stacks).Msg("memory of each agent connected in this step")
		window := fleetIdleWindow
		if n < steps[len(steps)-1] {
			window /= 2
		}
		if p.cpuPercent, err = idleWindow(ctx, e, srv, n, window); err != nil {
			return nil, err
		}
		// The first fan-out pays for the collections that read the heap
		// (see fleetSteps); the one timed is the next.
		if p.firstFanout, err = d.measuredFanOut(ctx, n, "first", nil); err != nil {
			return nil, fmt.Errorf("first fan-out to %d agents: %w", n, err)
		}
		if err := waitQuiet(srv.pid, 10*time.Second); err != nil {
			return nil, err
		}
		if p.referenceWork, err = machinePace(ctx); err != nil {
			return nil, err
		}
		profiled := srv.cpuProfile(ctx, fmt.Sprintf("fleet-%d-fanout.cpu", n), fleetFanOutProfile)
		driverProfiled := benchSideProfile(e, srv.profiles, fmt.Sprintf("fleet-%d-fanout-driver.cpu", n))
		p.fanout, err = d.measuredFanOut(ctx, n, "again", func(l *zerolog.Event) { l.Dur("reference_work_before", p.referenceWork) })
		driverProfiled()
		if perr := profiled(); perr != nil {
			return nil, perr
		}
		if srv.profiles != "" && err == nil {
			// What the fan-out allocated: this heap profile less the one
			// taken after the idle window.
			if _, err := srv.liveMemory(ctx, fmt.Sprintf("fleet-%d-fanout-end", n)); err != nil {
				return nil, err
			}
		}
		if err != nil {
			return nil, fmt.Errorf("fan-out to %d agents: %w", n, err)
		}
		// Dispatch is timed with the agents idle, not in the fan-out's
		// wake (the read models still applying its last events).
		if err := waitQuiet(srv.pid, 10*time.Second); err != nil {
			return nil, err
		}
		if p.dispatchP99, err = d.dispatchP99(ctx); err != nil {
			return nil, fmt.Errorf("dispatch with %d agents: %w", n, err)
		}
		select {
		case err := <-d.errs:
			return nil, fmt.Errorf("an agent of the fleet: %w", err)
		default:
		}
		series = append(series, p)
		out["server_kib_per_agent_connection_"+strconv.Itoa(n)] = round(p.kibPerAgent, 1)
		out["idle_cpu_percent_"+strconv.Itoa(n)+"_agents"] = round(p.cpuPercent, 1)
		out["fanout_"+strconv.Itoa(n)+"_real_agents_s"] = round(p.fanout.Seconds(), 2)
		out["fanout_first_"+strconv.Itoa(n)+"_real_agents_s"] = round(p.firstFanout.Seconds(), 2)
		out["dispatch_p99_ms_"+strconv.Itoa(n)+"_agents"] = round(float64(p.dispatchP99.Microseconds())/1000, 1)
		out["server_rss_mib_"+strconv.Itoa(n)+"_agents"] = round(float64(rss)/(1<<20), 1)
		out["long_poll_agents_"+strconv.Itoa(n)] = d.pollers
		out["reference_work_ms_before_fanout_"+strconv.Itoa(n)] = round(float64(p.referenceWork.Microseconds())/1000, 1)
		e.log.Info().Int("agents", n).Int("long_polling", d.pollers).Float64("kib_per_agent", round(p.kibPerAgent, 1)).
			Float64("idle_cpu_percent", round(p.cpuPercent, 1)).Dur("fanout", p.fanout).Dur("dispatch_p99", p.dispatchP99).
			Msg("fleet step measured")
	}
	if e.cfg.chart != "" && len(series) > 0 {
		if err := os.WriteFile(e.cfg.chart, fleetChart(series), 0o644); err != nil {
			return nil, fmt.Errorf("write the fleet chart: %w", err)
		}
	}
	return out, nil
}

type fleetPoint struct {
	agents      int
	kibPerAgent float64
	cpuPercent  float64
	fanout      time.Duration
	firstFanout time.Duration // the fan-out right after the heap was read
	dispatchP99 time.Duration
	// referenceWork is how long a fixed piece of work took just before the
	// fan-out (referenceWork): the machine's pace then.
	referenceWork time.Duration
}

// fleetPollShare: one agent in this many follows its feed by long polling
// over plain HTTP, as an agent behind a proxy that does not pass WebSockets
// does; the others hold a WebSocket.
const fleetPollShare = 10

// fleetDriverGCPercent is the driver's GOGC while it drives the fleet.
const fleetDriverGCPercent = 300

// fleetIssuers is how many API tokens create the fleet's join tokens.
const fleetIssuers = 8

// fromManyAddresses is an HTTP client whose connections come from loopback
// addresses 127.0.0.2 to 127.0.1.251 in turn (Linux routes all of
// 127.0.0.0/8 to the loopback device).
func fromManyAddresses() *http.Client {
	var next atomic.Uint32
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	tr := &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: time.Minute}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		n := next.Add(1) % 500
		d := *dialer
		d.LocalAddr = &net.TCPAddr{IP: net.IPv4(127, 0, byte(n/250), byte(2+n%250))}
		return d.DialContext(ctx, network, addr)
	}
	return &http.Client{Timeout: 90 * time.Second, Transport: tr}
}

// raiseFileLimit lifts the soft limit on open files to the hard one and
// returns it: each agent holds a connection.
func raiseFileLimit() uint64 {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0
	}
	if l.Cur < l.Max {
		l.Cur = l.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l) // the limit read is what counts
		_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l)
	}
	return l.Cur
}

// quietMemory is the served cairnd's live memory after a moment's quiet
// (the collections the heap profile asks for do the rest).
func quietMemory(ctx context.Context, srv *servedCairnd, label string) (liveMemory, error) {
	time.Sleep(2 * time.Second)
	return srv.liveMemory(ctx, label)
}

// idleWindow is cairnd's CPU over window with the n agents idle,
// as a share of one core. It logs the collections and allocations the
// window saw and, with -profiles, keeps its CPU profile and a heap profile
// after it (less the one before, what the window allocated).
func idleWindow(ctx context.Context, e *env, srv *servedCairnd, n int, window time.Duration) (float64, error) {
	profiled := srv.cpuProfile(ctx, fmt.Sprintf("fleet-%d-idle.cpu", n), window)
	counters := []string{"go_gc_duration_seconds_count", "go_memstats_alloc_bytes_total"}
	before, err := srv.metrics(ctx, counters...)
	if err != nil {
		return 0, errors.Join(err, profiled())
	}
	busy, err := idleCPU(srv.pid, window)
	if err != nil {
		return 0, errors.Join(err, profiled())
	}
	after, err := srv.metrics(ctx, counters...)
	if err := errors.Join(err, profiled()); err != nil {
		return 0, err
	}
	e.log.Info().Int("agents", n).Float64("cpu_percent", round(busy, 1)).Float64("collections", after[0]-before[0]).
		Float64("allocated_mib", round((after[1]-before[1])/(1<<20), 1)).Msg("idle window")
	if srv.profiles != "" {
		if _, err := srv.liveMemory(ctx, fmt.Sprintf("fleet-%d-idle-end", n)); err != nil {
			return 0, err
		}
	}
	return busy, nil
}

// waitQuiet waits until a process used under half a core over half a
// second, or for at most limit.
func waitQuiet(pid int, limit time.Duration) error {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); {
		busy, err := idleCPU(pid, 500*time.Millisecond)
		if err != nil || busy < 50 {
			return err
		}
	}
	return nil
}

// idleCPU is the CPU time a process spent over window, as a percentage of
// one core.
func idleCPU(pid int, window time.Duration) (float64, error) {
	t0, _, err := processTicks(pid)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	time.Sleep(window)
	t1, _, err := processTicks(pid)
	if err != nil {
		return 0, err
	}
	return float64(t1-t0) / ticksPerSecond / time.Since(start).Seconds() * 100, nil
}

const ticksPerSecond = 100 // USER_HZ on Linux

// processTicks is the CPU time a process used, user and system, in clock
// ticks, and its command's name.
func processTicks(pid int) (int64, string, error) {
	st, err := readProcStat(pid)
	return st.user + st.system, st.name, err
}

// procStat is what /proc/PID/stat says of a process.
type procStat struct {
	name         string
	user, system int64 // CPU time in clock ticks
	minorFaults  int64 // pages it touched for the first time, or again after they were given back
}

func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	return parseProcStat(pid, b)
}

func parseProcStat(pid int, b []byte) (procStat, error) {
	open, end := strings.IndexByte(string(b), '('), strings.LastIndexByte(string(b), ')')
	if open < 0 || end < open {
		return procStat{}, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	// The fields after the command's name (which may hold spaces).
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 13 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	minflt, err1 := strconv.ParseInt(f[7], 10, 64)
	utime, err2 := strconv.ParseInt(f[11], 10, 64)
	stime, err3 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return procStat{name: string(b[open+1 : end]), user: utime, system: stime, minorFaults: minflt}, nil
}

// postgresTicks is the CPU time, in clock ticks, the PostgreSQL processes
// on this machine used so far (the bench's cluster: it runs alone).
func postgresTicks() int64 {
	dirs, _ := os.ReadDir("/proc")
	var sum int64
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if t, name, err := processTicks(pid); err == nil && name == "postgres" {
			sum += t
		}
	}
	return sum
}

// cpuShares is the CPU time cairnd, PostgreSQL and the bench itself used
// while it ran, in seconds: on a machine whose pace moves a fan-out's
// time by a third from one run to the next, the work it took moves less.
// Of cairnd's it tells the kernel's part and the pages it faulted in.
func cpuShares(cairndPID int, run func() error) (cpuShare, error) {
	c0, err := readProcStat(cairndPID)
	if err != nil {
		return cpuShare{}, err
	}
	p0 := postgresTicks()
	b0, err := cpuTime()
	if err != nil {
		return cpuShare{}, err
	}
	if err := run(); err != nil {
		return cpuShare{}, err
	}
	c1, err := readProcStat(cairndPID)
	if err != nil {
		return cpuShare{}, err
	}
	b1, err := cpuTime()
	if err != nil {
		return cpuShare{}, err
	}
	return cpuShare{
		cairnd:       float64(c1.user+c1.system-c0.user-c0.system) / ticksPerSecond,
		cairndSystem: float64(c1.system-c0.system) / ticksPerSecond,
		cairndFaults: c1.minorFaults - c0.minorFaults,
		postgres:     float64(postgresTicks()-p0) / ticksPerSecond,
		bench:        (b1 - b0).Seconds(),
	}, nil
}

// cpuShare is the CPU time, in seconds, each process of a run used.
type cpuShare struct {
	cairnd, cairndSystem float64
	cairndFaults         int64
	postgres, bench      float64
}

// enroll enrolls n more nodes, each with a join token of its own, as agents
// do.
func (d *fleetDriver) enroll(ctx context.Context, n int) error {
	creds := make([]string, n)
	base := len(d.sessions)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for i := range n {
		g.Go(func() error {
			var out struct{ CreateJoinToken struct{ Token string } }
			issuer := d.issuers[i%len(d.issuers)]
			if err := issuer.Do(gctx, `mutation { createJoinToken(input: {ttlSeconds: 3600}) { token } }`, nil, &out); err != nil {
				return err
			}
			cred, err := agent.Enroll(gctx, d.url, d.enrollHC, agent.EnrollInput{
				JoinToken: out.CreateJoinToken.Token, Hostname: fmt.Sprintf("fleet-%05d", base+i),
			}, zerolog.Nop())
			creds[i] = cred
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for i, cred := range creds {
		transport, hc := agent.TransportWebSocket, d.hc
		if (base+i)%fleetPollShare == fleetPollShare-1 {
			// A client of its own, as on a real node: its long poll holds
			// one connection and its reports and heartbeats another.
			transport = agent.TransportPoll
			hc = &http.Client{Timeout: 90 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 2, IdleConnTimeout: time.Minute}}
			d.pollers++
		}
		s, err := agent.NewSession(agent.SessionConfig{
			Server: d.url, Credential: cred, Transport: transport, HTTPClient: hc,
			Connected: func() { d.connected.Add(1) },
		})
		if err != nil {
			return err
		}
		d.sessions = append(d.sessions, s)
	}
	return nil
}

// connect starts the sessions [from, to) and waits until their feeds are up.
func (d *fleetDriver) connect(ctx context.Context, from, to int) error {
	want := d.connected.Load() + int64(to-from)
	for i, s := range d.sessions[from:to] {
		go func() {
			err := s.Follow(ctx, func(l agent.Lease) error {
				d.received(s.NodeID(), l)
				go d.complete(ctx, s, l)
				return nil
			})
			d.fail(ctx, err)
		}()
		go func() {
			// Agents start at different times, and each sends its first
			// heartbeat as it starts; the agent spreads the ones after it
			// over the interval.
			if sleepCtx(ctx, time.Duration(rand.Int64N(int64(fleetStartSpread)))) != nil {
				return
			}
			d.fail(ctx, s.Heartbeats(ctx, func() []string { return nil }, func(string) {}))
		}()
		if i%64 == 63 {
			// Connections arrive as a fleet's would after a restart:
			// quickly, not all in the same millisecond.
			time.Sleep(5 * time.Millisecond)
		}
	}
	deadline := time.Now().Add(3 * time.Minute)
	for d.connected.Load() < want {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d feeds connected after 3 minutes", d.connected.Load(), want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

func (d *fleetDriver) fail(ctx context.Context, err error) {
	if err == nil || ctx.Err() != nil {
		return
	}
	select {
	case d.errs <- err:
	default:
	}
}

func (d *fleetDriver) received(nodeID string, l agent.Lease) {
	now := time.Now().UnixNano()
	d.leased.Add(1)
	d.firstLease.CompareAndSwap(0, now)
	d.lastLease.Store(now)
	d.mu.Lock()
	ch := d.waiting[nodeID]
	delete(d.waiting, nodeID)
	d.mu.Unlock()
	if ch != nil {
		ch <- time.Now()
	}
}

// complete reports a lease's job started (which acknowledges it) and
// succeeded, with the command ids cairn-agent would use.
func (d *fleetDriver) complete(ctx context.Context, s *agent.Session, l agent.Lease) {
	if l.CancelRequested {
		return
	}
	in := map[string]any{"nodeId": s.NodeID(), "jobId": l.Job.ID}
	in["commandId"] = s.CommandID(l.Job.ID, l.Attempt, "start")
	if err := s.Report(ctx, "Start", in); err != nil {
		d.fail(ctx, fmt.Errorf("start job %s: %w", l.Job.ID, err))
		return
	}
	in["commandId"] = s.CommandID(l.Job.ID, l.Attempt, "finish")
	in["result"] = agent.Result{Outcome: agent.OutcomeSucceeded}
	if err := s.Report(ctx, "Finish", in); err != nil {
		d.fail(ctx, fmt.Errorf("finish job %s: %w", l.Job.ID, err))
		return
	}
	d.finished.Add(1)
	d.lastResult.Store(time.Now().UnixNano())
}

// waitOnline waits until no node is still recorded as enrolled and not yet
// connected: the connections' own commands are done before the fleet is
// measured idle.
func (d *fleetDriver) waitOnline(ctx context.Context) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var q struct {
			Nodes struct{ PageInfo struct{ HasNextPage bool } }
		}
		if err := d.admin.Do(ctx, `{ nodes(first: 0, filter: {status: [ENROLLED]}) { pageInfo { hasNextPage } } }`, nil, &q); err != nil {
			return err
		}
		if !q.Nodes.PageInfo.HasNextPage {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nodes were still recorded as not connected 2 minutes after their agents connected")
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// measuredFanOut is a fan-out to the n nodes, with the CPU each process
// took for it logged under label.
func (d *fleetDriver) measuredFanOut(ctx context.Context, n int, label string, more func(*zerolog.Event)) (time.Duration, error) {
	var took time.Duration
	cpu, err := cpuShares(d.cairndPID, func() (err error) {
		took, err = d.fanOut(ctx, n)
		return err
	})
	if err != nil {
		return 0, err
	}
	l := d.log.Info().Int("agents", n).Str("fanout", label).Dur("took", took).
		Float64("cairnd_cpu_s", cpu.cairnd).Float64("cairnd_system_cpu_s", cpu.cairndSystem).
		Int64("cairnd_page_faults", cpu.cairndFaults).Float64("postgres_cpu_s", cpu.postgres).
		Float64("driver_cpu_s", cpu.bench).Float64("cpu_ms_per_child", (cpu.cairnd+cpu.postgres+cpu.bench)*1000/float64(n))
	if more != nil {
		more(l)
	}
	l.Msg("CPU the fan-out took")
	return took, nil
}

// fanOut submits one job on every node and waits until it completed.
func (d *fleetDriver) fanOut(ctx context.Context, n int) (time.Duration, error) {
	d.firstLease.Store(0)
	start := time.Now()
	var out struct {
		SubmitJob struct {
			Cursor string
			Job    struct{ ID string }
		}
	}
	if err := d.admin.Do(ctx, `mutation { submitJob(input: {spec: {kind: EXEC, exec: {argv: ["true"]}},
		target: {every: true, mode: ALL}}) { cursor job { id } } }`, nil, &out); err != nil {
		return 0, err
	}
	id := out.SubmitJob.Job.ID
	// The fan-out's end is watched as an operator's portal would, through
	// its job's changes: polled, each look read the job's stream, whose
	// record of the children names every one (4 ms at 10,000 children).
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	changes, err := d.admin.Subscribe(ctx, client.TransportWS, client.Request{
		Query:     `subscription($id: ID!, $after: Cursor) { jobChanged(id: $id, after: $after) { job { status } } }`,
		Variables: map[string]any{"id": id, "after": out.SubmitJob.Cursor},
	})
	if err != nil {
		return 0, fmt.Errorf("follow the fan-out's job: %w", err)
	}
	defer changes.Close()
	leased, finished := d.leased.Load(), d.finished.Load()
	for {
		resp, err := changes.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return 0, fmt.Errorf("the fan-out to %d nodes had not ended after 5 minutes: %w", n, err)
			}
			return 0, fmt.Errorf("follow the fan-out's job: %w", err)
		}
		if len(resp.Errors) > 0 {
			return 0, fmt.Errorf("follow the fan-out's job: %w", resp.Errors)
		}
		var change struct{ Job struct{ Status string } }
		if err := resp.Field(&change); err != nil {
			return 0, fmt.Errorf("follow the fan-out's job: %w", err)
		}
		switch status := change.Job.Status; status {
		case "SUCCEEDED":
			took := time.Since(start)
			d.log.Info().Int("agents", n).Int64("leases", d.leased.Load()-leased).
				Int64("results", d.finished.Load()-finished).
				Dur("first_lease", time.Unix(0, d.firstLease.Load()).Sub(start)).
				Dur("last_lease", time.Unix(0, d.lastLease.Load()).Sub(start)).
				Dur("last_result", time.Unix(0, d.lastResult.Load()).Sub(start)).
				Dur("recorded_complete", took).Msg("fan-out timeline")
			return took, nil
		case "FAILED", "TIMED_OUT", "CANCELLED":
			return 0, fmt.Errorf("the fan-out ended %s", status)
		}
	}
}

// dispatchP99 submits jobs for random nodes, one at a time, and times each
// until the node's agent receives it.
func (d *fleetDriver) dispatchP99(ctx context.Context) (time.Duration, error) {
	type sample struct{ total, submit time.Duration }
	lat := make([]sample, 0, fleetDispatchSamples)
	for range fleetDispatchSamples {
		s := d.sessions[rand.IntN(len(d.sessions))]
		ch := make(chan time.Time, 1)
		d.mu.Lock()
		d.waiting[s.NodeID()] = ch
		d.mu.Unlock()
		start := time.Now()
		if err := d.admin.Do(ctx, `mutation($node: ID!) { submitJob(input: {spec: {kind: EXEC, exec: {argv: ["true"]}},
			target: {nodeId: $node}}) { job { id } } }`, map[string]any{"node": s.NodeID()}, nil); err != nil {
			return 0, err
		}
		submitted := time.Since(start)
		select {
		case at := <-ch:
			lat = append(lat, sample{at.Sub(start), submitted})
		case <-time.After(30 * time.Second):
			return 0, fmt.Errorf("node %s received no lease 30 s after its job was submitted", s.NodeID())
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	slices.SortFunc(lat, func(a, b sample) int { return cmp.Compare(a.total, b.total) })
	percentile := func(p int) time.Duration { return lat[len(lat)*p/100-1].total }
	// The slowest samples' submits (the mutation's answer) say whether a
	// tail was spent appending the job or bringing its lease to the agent.
	var slowSubmits []string
	for _, l := range lat[len(lat)*98/100:] {
		slowSubmits = append(slowSubmits, fmt.Sprintf("%.1f of %.1f", float64(l.submit.Microseconds())/1000, float64(l.total.Microseconds())/1000))
	}
	d.log.Info().Int("agents", len(d.sessions)).Dur("p50", percentile(50)).Dur("p90", percentile(90)).Dur("p99", percentile(99)).
		Dur("max", lat[len(lat)-1].total).Strs("slowest_submit_ms", slowSubmits).Msg("dispatch latencies")
	return percentile(99), nil
}
