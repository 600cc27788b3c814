// Package eventgen makes synthetic but plausible event histories of every
// aggregate — locations, tenants, users, tokens, templates, nodes, jobs,
// services and their resources — for tests and benchmarks of the
// projections. A generator is deterministic for a seed and a start time.
package eventgen

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"cairn/domain"
	"cairn/domain/job"
	"cairn/domain/node"
	"cairn/domain/resource"
	"cairn/domain/service"
	"cairn/domain/template"
	"cairn/domain/tenant"
	"cairn/eventstore"
)

// Item is one command's output: events for one stream.
type Item struct {
	StreamID   string
	StreamType string
	Events     []domain.Event
	Metadata   eventstore.Metadata
}

// Options size a history.
type Options struct {
	Seed  uint64
	Start time.Time
	// Prefix makes ids unique between generators writing to one log.
	Prefix    string
	Nodes     int // default 50
	Tenants   int // default 5
	Templates int // default 4
	// Step is the time between two commands (default 10 ms).
	Step time.Duration
}

// Generator produces items one command at a time.
type Generator struct {
	o   Options
	rnd *rand.Rand
	now time.Time
	seq int
	out []Item

	nodes     []string
	online    map[string]bool
	tenants   []string
	templates []string
	jobs      []*jobState
	services  []*serviceState
	started   bool
}

type jobState struct {
	id, node string
	step     int
	attempt  int
}

type serviceState struct {
	id, tenant string
	resources  []string
	step       int
}

// New returns a generator.
func New(o Options) *Generator {
	if o.Nodes <= 0 {
		o.Nodes = 50
	}
	if o.Tenants <= 0 {
		o.Tenants = 5
	}
	if o.Templates <= 0 {
		o.Templates = 4
	}
	if o.Step <= 0 {
		o.Step = 10 * time.Millisecond
	}
	if o.Start.IsZero() {
		o.Start = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return &Generator{o: o, rnd: rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15)), now: o.Start.UTC(),
		online: map[string]bool{}}
}

// Take returns the next items holding at least n events in all.
func (g *Generator) Take(n int) []Item {
	var out []Item
	count := 0
	for count < n {
		for _, it := range g.Next() {
			out = append(out, it)
			count += len(it.Events)
		}
	}
	return out
}

// Next returns the items of the next step (usually one).
func (g *Generator) Next() []Item {
	g.out = g.out[:0]
	if !g.started {
		g.setup()
		g.started = true
		return append([]Item(nil), g.out...)
	}
	switch r := g.rnd.IntN(100); {
	case r < 55:
		g.jobStep()
	case r < 85:
		g.serviceStep()
	case r < 97:
		g.nodeStep()
	default:
		g.tenancyStep()
	}
	return append([]Item(nil), g.out...)
}

func (g *Generator) tick() time.Time {
	g.now = g.now.Add(g.o.Step)
	return g.now
}

func (g *Generator) id(kind string) string {
	g.seq++
	return fmt.Sprintf("%s%s-%d", g.o.Prefix, kind, g.seq)
}

func (g *Generator) emit(streamType, id, tenantID string, evs ...domain.Event) {
	g.out = append(g.out, Item{StreamID: domain.StreamID(streamType, id), StreamType: streamType, Events: evs,
		Metadata: eventstore.Metadata{Actor: "eventgen", Tenant: tenantID, CorrelationID: fmt.Sprintf("c%d", g.seq)}})
}

func (g *Generator) setup() {
	for i := range 3 {
		id := g.id("loc")
		g.emit("location", id, "", tenant.LocationCreated{LocationID: id, Name: fmt.Sprintf("site %d", i), At: g.tick()})
	}
	for i := range g.o.Tenants {
		id := g.id("tenant")
		g.tenants = append(g.tenants, id)
		g.emit("tenant", id, id, tenant.TenantCreated{TenantID: id, Name: fmt.Sprintf("tenant %d", i), At: g.tick()})
		uid := g.id("user")
		g.emit("user", uid, id, tenant.UserCreated{UserID: uid, Name: "admin of " + id, Role: tenant.RoleTenantAdmin, TenantID: id, At: g.tick()})
		tid := g.id("token")
		at := g.tick()
		g.emit("api_token", tid, id, tenant.TokenIssued{TokenID: tid, UserID: uid, Role: tenant.RoleTenantAdmin, TenantID: id,
			SecretHash: fmt.Sprintf("%064x", g.seq), ExpiresAt: at.Add(90 * 24 * time.Hour), At: at})
	}
	for i := range g.o.Templates {
		name, version := fmt.Sprintf("%sapp%d", g.o.Prefix, i), "1.0.0"
		id := template.ID(name, version)
		g.templates = append(g.templates, id)
		desc := json.RawMessage(fmt.Sprintf(`{"apiVersion":"cairn/v1","metadata":{"name":%q,"version":%q,"category":"web","description":"a web app"},"resources":[{"name":"web","plugin":"agent","type":"process"}]}`, name, version))
		g.emit("template", id, "", template.Registered{Name: name, Version: version, Vendor: "acme", Descriptor: desc, Digest: "sha256:x", At: g.tick()},
			template.Published{Name: name, Version: version, At: g.tick()})
	}
	for i := range g.o.Nodes {
		id := g.id("node")
		g.nodes = append(g.nodes, id)
		at := g.tick()
		g.emit("node", id, "", node.Enrolled{NodeID: id, Hostname: fmt.Sprintf("host-%d", i), LocationID: "",
			Labels: map[string]string{"rack": fmt.Sprint(i % 4), "gpu": fmt.Sprint(i%5 == 0)}, At: at},
			node.Connected{NodeID: id, At: at},
			node.FactsReported{NodeID: id, Facts: node.Facts{CPU: node.CPU{Model: "x86", Cores: 8, Threads: 16}, MemoryBytes: 32 << 30,
				OS: node.OS{Name: "linux", Kernel: "6.1", Arch: "amd64"}}, At: at})
		g.online[id] = true
	}
}

func (g *Generator) pick(xs []string) string { return xs[g.rnd.IntN(len(xs))] }

// At most this many jobs and services are under way at once, as an
// installation's concurrency is bounded: each one's events stay close
// together in the log.
const (
	maxJobsUnderWay     = 200
	maxServicesUnderWay = 50
)

func (g *Generator) jobStep() {
	if len(g.jobs) < 20 || len(g.jobs) < maxJobsUnderWay && g.rnd.IntN(4) == 0 {
		id := g.id("job")
		n := g.pick(g.nodes)
		j := &jobState{id: id, node: n}
		g.jobs = append(g.jobs, j)
		g.emit("job", id, g.pick(g.tenants), job.Submitted{JobID: id, Spec: job.Spec{Kind: job.KindAction, Action: g.pick([]string{"files.write", "process.start", "host.facts"}),
			Args: json.RawMessage(`{"path":"/tmp/x"}`)}, Target: job.Target{NodeID: n}, Timeout: time.Minute,
			Retry: job.RetryPolicy{Max: 2, Backoff: time.Second}, Submitter: "eventgen", At: g.tick()})
		return
	}
	i := g.rnd.IntN(len(g.jobs))
	j := g.jobs[i]
	at := g.tick()
	switch j.step {
	case 0:
		j.attempt++
		g.emit("job", j.id, "", job.Leased{JobID: j.id, NodeID: j.node, Attempt: j.attempt, LeaseUntil: at.Add(30 * time.Second), At: at})
	case 1:
		g.emit("job", j.id, "", job.Acknowledged{JobID: j.id, NodeID: j.node, At: at}, job.Started{JobID: j.id, NodeID: j.node, At: at})
	default:
		outcome, code := job.StatusSucceeded, 0
		if g.rnd.IntN(10) == 0 {
			outcome, code = job.StatusFailed, 1
		}
		g.emit("job", j.id, "", job.Finished{JobID: j.id, NodeID: j.node, Attempt: j.attempt, Outcome: outcome,
			Result: job.Result{ExitCode: code, CPUTimeMS: int64(g.rnd.IntN(5000))}, At: at})
		g.jobs = append(g.jobs[:i], g.jobs[i+1:]...)
		return
	}
	j.step++
}

func (g *Generator) serviceStep() {
	if len(g.services) < 10 || len(g.services) < maxServicesUnderWay && g.rnd.IntN(5) == 0 {
		id := g.id("svc")
		s := &serviceState{id: id, tenant: g.pick(g.tenants)}
		for range 2 {
			s.resources = append(s.resources, g.id("res"))
		}
		g.services = append(g.services, s)
		name, version, _ := strings.Cut(g.pick(g.templates), "@")
		g.emit("service", id, s.tenant, service.RegistrationRequested{ServiceID: id, TenantID: s.tenant, Name: "svc " + id,
			TemplateName: name, TemplateVersion: version, Variables: json.RawMessage(`{"size":"small"}`), ResourceIDs: s.resources, At: g.tick()})
		for _, r := range s.resources {
			g.emit("resource", r, s.tenant, resource.Planned{ResourceID: r, ServiceID: id, Plugin: "agent", Type: "process",
				Properties: json.RawMessage(`{"cmd":"run"}`), DependsOn: []string{}, At: g.tick()})
		}
		return
	}
	i := g.rnd.IntN(len(g.services))
	s := g.services[i]
	at := g.tick()
	switch s.step {
	case 0, 2: // create, then start, each resource
		for _, r := range s.resources {
			if s.step == 0 {
				g.emit("resource", r, s.tenant, resource.CreateBegun{ResourceID: r, At: at}, resource.Created{ResourceID: r, Outputs: json.RawMessage(`{"pid":1}`), At: at})
			} else {
				g.emit("resource", r, s.tenant, resource.StartBegun{ResourceID: r, At: at}, resource.Started{ResourceID: r, At: at})
			}
		}
	case 1:
		g.emit("service", s.id, s.tenant, service.Registered{ServiceID: s.id, Outputs: json.RawMessage(`{"url":"http://x"}`), At: at},
			service.StartRequested{ServiceID: s.id, At: at})
	case 3:
		if g.rnd.IntN(8) == 0 {
			g.emit("service", s.id, s.tenant, service.StartFailed{ServiceID: s.id, Cause: "health check failed", At: at})
		} else {
			g.emit("service", s.id, s.tenant, service.Started{ServiceID: s.id, At: at})
		}
	case 4:
		g.emit("service", s.id, s.tenant, service.StopRequested{ServiceID: s.id, At: at}, service.Stopped{ServiceID: s.id, At: at})
	case 5:
		g.emit("service", s.id, s.tenant, service.RemovalRequested{ServiceID: s.id, At: at})
		for _, r := range s.resources {
			g.emit("resource", r, s.tenant, resource.DestroyBegun{ResourceID: r, At: at}, resource.Destroyed{ResourceID: r, At: at})
		}
	default:
		g.emit("service", s.id, s.tenant, service.Removed{ServiceID: s.id, At: at})
		g.services = append(g.services[:i], g.services[i+1:]...)
		return
	}
	s.step++
}

func (g *Generator) nodeStep() {
	n := g.pick(g.nodes)
	at := g.tick()
	switch r := g.rnd.IntN(10); {
	case r < 4:
		if g.online[n] {
			g.emit("node", n, "", node.Disconnected{NodeID: n, At: at})
		} else {
			g.emit("node", n, "", node.Connected{NodeID: n, At: at})
		}
		g.online[n] = !g.online[n]
	case r < 7:
		g.emit("node", n, "", node.LabelsSet{NodeID: n, Labels: map[string]string{"rack": fmt.Sprint(g.rnd.IntN(4)), "tier": g.pick([]string{"gold", "silver"})}, At: at})
	case r < 9:
		g.emit("node", n, "", node.FactsReported{NodeID: n, Facts: node.Facts{CPU: node.CPU{Model: "x86", Cores: 8 + g.rnd.IntN(3), Threads: 16},
			MemoryBytes: 32 << 30, OS: node.OS{Name: "linux", Kernel: "6.1", Arch: "amd64"}}, At: at})
	default:
		g.emit("node", n, "", node.DrainRequested{NodeID: n, Reason: "maintenance", At: at}, node.Undrained{NodeID: n, At: at})
	}
}

func (g *Generator) tenancyStep() {
	t := g.pick(g.tenants)
	g.emit("tenant", t, t, tenant.TenantRenamed{TenantID: t, Name: fmt.Sprintf("tenant %s renamed %d", t, g.seq), At: g.tick()})
}
