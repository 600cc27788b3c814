// Package agent is the plugin that builds services out of Cairn's own nodes:
// directories, files and supervised processes, each made by SAL actions run
// as agent jobs on a node chosen by the resource's placement.
//
// The plugin needs two things from the rest of Cairn, behind small
// interfaces: a JobRunner that runs one SAL action on one node and returns
// its result, and a NodeLister that lists the nodes that can take work. It
// keeps no state of its own: a resource's node is recorded in its outputs,
// and when those were never recorded (a crash between the job and its
// record) the same node is chosen again, since placement is a pure function
// of the resource id and the candidate nodes.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	"cairn/domain/placement"
	"cairn/plugins"
	"cairn/sal/catalog"
)

// Resource types.
const (
	TypeDirectory = "directory"
	TypeFile      = "file"
	TypeProcess   = "process"
)

// JobRunner runs one SAL action (see sal/catalog) as a job on a node and
// waits for its result. An error means the action failed or could not be
// run; when it says that a path or supervised process does not exist, it
// should wrap plugins.ErrNotFound, which Observe reports as such.
type JobRunner interface {
	RunAction(ctx context.Context, a Action) (json.RawMessage, error)
}

// Action is one SAL action on one node, for a resource of a service.
type Action struct {
	NodeID string
	Action string
	Args   json.RawMessage
	// Sensitive says the arguments hold the value of a sensitive variable:
	// the job must carry them sealed, never in clear.
	Sensitive bool
	// TenantID is the tenant of the service the resource belongs to: its
	// jobs belong to that tenant too.
	TenantID string
}

// Node is a node the plugin may place resources on.
type Node struct {
	ID       string
	Location string
	Labels   map[string]string
}

// NodeLister lists the nodes that can take new work now (enrolled, online,
// not draining).
type NodeLister interface {
	Candidates(ctx context.Context) ([]Node, error)
}

// StaticNodes is a fixed list of nodes.
type StaticNodes []Node

// Candidates implements NodeLister.
func (s StaticNodes) Candidates(context.Context) ([]Node, error) { return slices.Clone(s), nil }

// Config holds the plugin's dependencies.
type Config struct {
	Runner JobRunner
	Nodes  NodeLister
}

// Plugin is the agent plugin. It is safe for concurrent use.
type Plugin struct {
	runner    JobRunner
	nodes     NodeLister
	validator *catalog.Validator
}

// New returns the plugin.
func New(cfg Config) (*Plugin, error) {
	if cfg.Runner == nil || cfg.Nodes == nil {
		return nil, errors.New("agent plugin: a job runner and a node lister are required")
	}
	v, err := catalog.NewValidator()
	if err != nil {
		return nil, fmt.Errorf("agent plugin: %w", err)
	}
	return &Plugin{runner: cfg.Runner, nodes: cfg.Nodes, validator: v}, nil
}

const (
	pathSchema = `{"type":"string","minLength":2,"maxLength":4096,"pattern":"^/","description":"absolute path inside one of the node's file roots"}`
	modeSchema = `{"type":"string","pattern":"^0?[0-7]{3}$","description":"permission bits in octal, e.g. \"0755\""}`
	nodeSchema = `{"type":"string","minLength":1,"maxLength":128,"description":"the node to use, e.g. another resource's node output; placement chooses one when absent"}`
)

// ResourceTypes implements plugins.Plugin.
func (p *Plugin) ResourceTypes() []plugins.ResourceType {
	return []plugins.ResourceType{
		{
			Name: TypeDirectory, Description: "A directory on a node; destroying it removes everything in it.", Placed: true,
			Schema: json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","additionalProperties":false,"required":["path"],` +
				`"properties":{"path":` + pathSchema + `,"mode":` + modeSchema + `,"node":` + nodeSchema + `}}`),
		},
		{
			Name: TypeFile, Description: "A file on a node with the given content.", Placed: true, UpdateInPlace: true,
			Schema: json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","additionalProperties":false,"required":["path","content"],` +
				`"properties":{"path":` + pathSchema + `,"content":{"type":"string"},"encoding":{"enum":["utf-8","base64"]},"mode":` + modeSchema + `,"node":` + nodeSchema + `}}`),
		},
		{
			Name: TypeProcess, Description: "A process the node's agent keeps running between start and stop.", Placed: true, UpdateInPlace: true,
			DefaultRequests: placement.Resources{CPUMillis: 100, MemoryBytes: 64 << 20},
			Schema: json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","additionalProperties":false,"required":["argv"],` +
				`"properties":{"name":{"type":"string","pattern":"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$","description":"supervised name, unique on the node; default cairn-<resource id>"},` +
				`"argv":{"type":"array","minItems":1,"items":{"type":"string"}},` +
				`"env":{"type":"object","additionalProperties":{"type":"string"}},"clear_env":{"type":"boolean"},` +
				`"dir":` + pathSchema + `,"stdout":` + pathSchema + `,"stderr":` + pathSchema + `,"node":` + nodeSchema + `,` +
				`"restart":{"type":"object","additionalProperties":false,"properties":{"max_restarts":{"type":"integer","minimum":-1},` +
				`"initial_backoff_ms":{"type":"integer","minimum":0},"max_backoff_ms":{"type":"integer","minimum":0},"reset_after_ms":{"type":"integer","minimum":0}}}}}`),
		},
	}
}

// props are the properties of every type; each type reads its own.
type props struct {
	Path     string            `json:"path"`
	Mode     string            `json:"mode,omitempty"`
	Node     string            `json:"node,omitempty"`
	Content  *string           `json:"content,omitempty"`
	Encoding string            `json:"encoding,omitempty"`
	Name     string            `json:"name,omitempty"`
	Argv     []string          `json:"argv,omitempty"`
	Env      map[string]string `json:"env,omitempty"`
	ClearEnv bool              `json:"clear_env,omitempty"`
	Dir      string            `json:"dir,omitempty"`
	Stdout   string            `json:"stdout,omitempty"`
	Stderr   string            `json:"stderr,omitempty"`
	Restart  json.RawMessage   `json:"restart,omitempty"`
}

// Outputs of every type.
type outputs struct {
	Node  string `json:"node"`
	Path  string `json:"path,omitempty"`
	Size  *int64 `json:"size,omitempty"`
	Mode  string `json:"mode,omitempty"`
	Name  string `json:"name,omitempty"`
	State string `json:"state,omitempty"`
	PID   int    `json:"pid,omitempty"`
}

func decodeProps(r plugins.Request) (props, error) {
	var pr props
	if len(r.Properties) == 0 {
		return pr, errors.New("properties are required")
	}
	if err := json.Unmarshal(r.Properties, &pr); err != nil {
		return pr, fmt.Errorf("properties: %w", err)
	}
	switch r.Type {
	case TypeDirectory, TypeFile:
		if pr.Path == "" {
			return pr, errors.New("properties.path is required")
		}
	case TypeProcess:
		if len(pr.Argv) == 0 {
			return pr, errors.New("properties.argv is required")
		}
	}
	return pr, nil
}

// node decides where the resource is: the node its properties name, else
// the scheduler's, else the node it was recorded on, else the placement's
// choice (when no scheduler runs).
func (p *Plugin) node(ctx context.Context, r plugins.Request, pr props) (string, error) {
	if pr.Node != "" {
		return pr.Node, nil
	}
	if r.Node != "" {
		return r.Node, nil
	}
	if len(r.Outputs) > 0 {
		var o outputs
		if json.Unmarshal(r.Outputs, &o) == nil && o.Node != "" {
			return o.Node, nil
		}
	}
	nodes, err := p.nodes.Candidates(ctx)
	if err != nil {
		return "", fmt.Errorf("list the nodes to place it on: %w", err)
	}
	return Place(r.ResourceID, r.Placement, nodes)
}

// PlacementError says why no node fits a placement.
type PlacementError struct {
	Placement  plugins.Placement
	Candidates int
}

func (e *PlacementError) Error() string {
	want := []string{}
	if e.Placement.Location != "" {
		want = append(want, "location "+e.Placement.Location)
	}
	for _, k := range slices.Sorted(maps.Keys(e.Placement.Labels)) {
		want = append(want, fmt.Sprintf("label %s=%s", k, e.Placement.Labels[k]))
	}
	if len(want) == 0 {
		return "no node can take work: enroll a node or bring one back online"
	}
	return fmt.Sprintf("none of the %d nodes that can take work has %s: label a node to match, or change the placement",
		e.Candidates, strings.Join(want, " and "))
}

// Place picks the node for a resource among those matching the placement,
// by rendezvous hashing of the resource id: the same resource gets the same
// node as long as that node remains a candidate, and resources spread
// evenly.
func Place(resourceID string, pl *plugins.Placement, nodes []Node) (string, error) {
	var want plugins.Placement
	if pl != nil {
		want = *pl
	}
	best, bestScore := "", uint64(0)
	for _, n := range nodes {
		if want.Location != "" && n.Location != want.Location {
			continue
		}
		match := true
		for k, v := range want.Labels {
			if n.Labels[k] != v {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		h := fnv.New64a()
		h.Write([]byte(resourceID))
		h.Write([]byte{0})
		h.Write([]byte(n.ID))
		if s := h.Sum64(); best == "" || s > bestScore || s == bestScore && n.ID < best {
			best, bestScore = n.ID, s
		}
	}
	if best == "" {
		return "", &PlacementError{Placement: want, Candidates: len(nodes)}
	}
	return best, nil
}

// run validates an action's arguments against the SAL catalogue (so a bad
// property is reported before any job is sent) and runs it on node.
func (p *Plugin) run(ctx context.Context, r plugins.Request, node, action string, args any) (json.RawMessage, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	if err := p.validator.Validate(action, raw); err != nil {
		return nil, err
	}
	out, err := p.runner.RunAction(ctx, Action{NodeID: node, Action: action, Args: raw, Sensitive: r.Sensitive, TenantID: r.TenantID})
	if err != nil {
		return nil, fmt.Errorf("%s on node %s: %w", action, node, err)
	}
	return out, nil
}

// Create implements plugins.Plugin: directories and files are made;
// processes are placed, and run from start to stop.
func (p *Plugin) Create(ctx context.Context, r plugins.Request) (json.RawMessage, error) {
	pr, err := decodeProps(r)
	if err != nil {
		return nil, err
	}
	node, err := p.node(ctx, r, pr)
	if err != nil {
		return nil, err
	}
	switch r.Type {
	case TypeDirectory:
		args := map[string]string{"path": pr.Path}
		if pr.Mode != "" {
			args["mode"] = pr.Mode
		}
		out, err := p.run(ctx, r, node, catalog.ActionFileMkdir, args)
		if err != nil {
			return nil, err
		}
		return fileOutputs(node, out)
	case TypeFile:
		args := map[string]any{"path": pr.Path, "content": *pr.Content}
		if pr.Encoding != "" {
			args["encoding"] = pr.Encoding
		}
		if pr.Mode != "" {
			args["mode"] = pr.Mode
		}
		out, err := p.run(ctx, r, node, catalog.ActionFileWrite, args)
		if err != nil {
			return nil, err
		}
		return fileOutputs(node, out)
	case TypeProcess:
		return json.Marshal(outputs{Node: node, Name: processName(r, pr), State: "stopped"})
	}
	return nil, &plugins.UnknownTypeError{Plugin: "agent", Type: r.Type}
}

// Start implements plugins.Plugin: a process is started under supervision
// unless it already runs; other types have nothing to start.
func (p *Plugin) Start(ctx context.Context, r plugins.Request) (json.RawMessage, error) {
	if r.Type != TypeProcess {
		return p.Observe(ctx, r)
	}
	pc, err := p.process(ctx, r)
	if err != nil {
		return nil, err
	}
	pr, node, name, st := pc.props, pc.node, pc.name, pc.status
	if !pc.found || !supervised(st.State) {
		args := map[string]any{"name": name, "argv": pr.Argv}
		if len(pr.Env) > 0 {
			args["env"] = pr.Env
		}
		for k, v := range map[string]string{"dir": pr.Dir, "stdout": pr.Stdout, "stderr": pr.Stderr} {
			if v != "" {
				args[k] = v
			}
		}
		if pr.ClearEnv {
			args["clear_env"] = true
		}
		if len(pr.Restart) > 0 {
			args["restart"] = pr.Restart
		}
		out, err := p.run(ctx, r, node, catalog.ActionSupervisorStart, args)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(out, &st); err != nil {
			return nil, fmt.Errorf("%s on node %s answered %s: %w", catalog.ActionSupervisorStart, node, out, err)
		}
	}
	return json.Marshal(outputs{Node: node, Name: name, State: st.State, PID: st.PID})
}

// Stop implements plugins.Plugin: a process is stopped if it runs; other
// types have nothing to stop.
func (p *Plugin) Stop(ctx context.Context, r plugins.Request) (json.RawMessage, error) {
	if r.Type != TypeProcess {
		return p.Observe(ctx, r)
	}
	return p.stopProcess(ctx, r)
}

func (p *Plugin) stopProcess(ctx context.Context, r plugins.Request) (json.RawMessage, error) {
	pc, err := p.process(ctx, r)
	if err != nil {
		return nil, err
	}
	if pc.found && supervised(pc.status.State) {
		if _, err := p.run(ctx, r, pc.node, catalog.ActionSupervisorStop, map[string]string{"name": pc.name}); err != nil {
			return nil, err
		}
	}
	return json.Marshal(outputs{Node: pc.node, Name: pc.name, State: "stopped"})
}

// processCall is what every call on a process resource starts from: its
// properties, the node it is on, its name and its supervisor's status.
type processCall struct {
	props  props
	node   string
	name   string
	status supervisedStatus
	found  bool
}

func (p *Plugin) process(ctx context.Context, r plugins.Request) (processCall, error) {
	var pc processCall
	var err error
	if pc.props, err = decodeProps(r); err != nil {
		return pc, err
	}
	if pc.node, err = p.node(ctx, r, pc.props); err != nil {
		return pc, err
	}
	pc.name = processName(r, pc.props)
	pc.status, pc.found, err = p.status(ctx, r, pc.node, pc.name)
	return pc, err
}

// Update implements plugins.Plugin: a file is written with its new content
// (and removed from where it was when its path or node changed); a process
// that runs is stopped as it was and started with its new properties.
// Directories are replaced, not updated.
func (p *Plugin) Update(ctx context.Context, r plugins.Request) (json.RawMessage, error) {
	var was outputs
	if len(r.Outputs) > 0 {
		if err := json.Unmarshal(r.Outputs, &was); err != nil {
			return nil, fmt.Errorf("recorded outputs: %w", err)
		}
	}
	switch r.Type {
	case TypeFile:
		out, err := p.Create(ctx, r)
		if err != nil {
			return nil, err
		}
		var now outputs
		if err := json.Unmarshal(out, &now); err != nil {
			return nil, err
		}
		if was.Path != "" && was.Node != "" && (was.Path != now.Path || was.Node != now.Node) {
			if _, err := p.run(ctx, r, was.Node, catalog.ActionFileRemove, map[string]any{"path": was.Path}); err != nil {
				return nil, fmt.Errorf("remove the file where it was: %w", err)
			}
		}
		return out, nil
	case TypeProcess:
		running := false
		if was.Node != "" && was.Name != "" {
			st, found, err := p.status(ctx, r, was.Node, was.Name)
			if err != nil {
				return nil, err
			}
			if running = found && supervised(st.State); running {
				if _, err := p.run(ctx, r, was.Node, catalog.ActionSupervisorStop, map[string]string{"name": was.Name}); err != nil {
					return nil, err
				}
			}
		}
		if running {
			return p.Start(ctx, r)
		}
		return p.Create(ctx, r)
	case TypeDirectory:
		return nil, fmt.Errorf("a directory: %w", plugins.ErrReplace)
	}
	return nil, &plugins.UnknownTypeError{Plugin: "agent", Type: r.Type}
}

// Destroy implements plugins.Plugin: directories are removed with their
// content, files removed, processes stopped. What is already gone is fine.
func (p *Plugin) Destroy(ctx context.Context, r plugins.Request) (json.RawMessage, error) {
	if r.Type == TypeProcess {
		return p.stopProcess(ctx, r)
	}
	pr, err := decodeProps(r)
	if err != nil {
		return nil, err
	}
	node, err := p.node(ctx, r, pr)
	if err != nil {
		return nil, err
	}
	args := map[string]any{"path": pr.Path}
	if r.Type == TypeDirectory {
		args["recursive"] = true
	}
	return p.run(ctx, r, node, catalog.ActionFileRemove, args)
}

// Observe implements plugins.Plugin.
func (p *Plugin) Observe(ctx context.Context, r plugins.Request) (json.RawMessage, error) {
	if r.Type == TypeProcess {
		pc, err := p.process(ctx, r)
		if err != nil {
			return nil, err
		}
		if !pc.found {
			pc.status.State = "stopped"
		}
		return json.Marshal(outputs{Node: pc.node, Name: pc.name, State: pc.status.State, PID: pc.status.PID})
	}
	pr, err := decodeProps(r)
	if err != nil {
		return nil, err
	}
	node, err := p.node(ctx, r, pr)
	if err != nil {
		return nil, err
	}
	out, err := p.run(ctx, r, node, catalog.ActionFileStat, map[string]string{"path": pr.Path})
	if err != nil {
		return nil, err
	}
	return fileOutputs(node, out)
}

type supervisedStatus struct {
	Name  string `json:"name"`
	State string `json:"state"`
	PID   int    `json:"pid"`
}

// status finds a supervised process by listing them all: the list answers
// "not there" without relying on how an error message is worded.
func (p *Plugin) status(ctx context.Context, r plugins.Request, node, name string) (supervisedStatus, bool, error) {
	out, err := p.run(ctx, r, node, catalog.ActionSupervisorStatus, map[string]string{})
	if err != nil {
		return supervisedStatus{}, false, err
	}
	var all []supervisedStatus
	if err := json.Unmarshal(out, &all); err != nil {
		return supervisedStatus{}, false, fmt.Errorf("%s on node %s answered %s: %w", catalog.ActionSupervisorStatus, node, out, err)
	}
	for _, s := range all {
		if s.Name == name {
			return s, true, nil
		}
	}
	return supervisedStatus{}, false, nil
}

// supervised reports whether a supervised process is running or will be
// restarted.
func supervised(state string) bool { return state == "running" || state == "backoff" }

func processName(r plugins.Request, pr props) string {
	if pr.Name != "" {
		return pr.Name
	}
	return "cairn-" + r.ResourceID
}

// fileOutputs turns a SAL file answer into the resource's outputs.
func fileOutputs(node string, raw json.RawMessage) (json.RawMessage, error) {
	var fi struct {
		Path string `json:"path"`
		Type string `json:"type"`
		Size int64  `json:"size"`
		Mode string `json:"mode"`
	}
	if err := json.Unmarshal(raw, &fi); err != nil {
		return nil, fmt.Errorf("node %s answered %s: %w", node, raw, err)
	}
	o := outputs{Node: node, Path: fi.Path, Mode: fi.Mode}
	if fi.Type == "file" {
		o.Size = &fi.Size
	}
	return json.Marshal(o)
}

// checkProps are the properties of the health checks the agent evaluates.
type checkProps struct {
	Port         json.Number `json:"port"`
	Host         string      `json:"host"`
	Path         string      `json:"path"`
	Scheme       string      `json:"scheme"`
	ExpectStatus int         `json:"expectStatus"`
}

// CheckHealth implements plugins.HealthChecker: the check runs on the
// resource's node, through its agent — process (the supervised process
// runs), tcp (a connection opens) and http (a GET answers the expected
// status). Command checks are not evaluated here.
func (p *Plugin) CheckHealth(ctx context.Context, r plugins.Request, c plugins.Check) (plugins.Health, error) {
	if c.Type == "process" {
		if r.Type != TypeProcess {
			return plugins.Health{}, fmt.Errorf("a process check of a %s: %w", r.Type, plugins.ErrCheckUnsupported)
		}
		pc, err := p.process(ctx, r)
		if err != nil {
			return plugins.Health{}, err
		}
		if pc.found && pc.status.State == "running" {
			return plugins.Health{Healthy: true}, nil
		}
		state := "not supervised"
		if pc.found {
			state = pc.status.State
		}
		return plugins.Health{Detail: fmt.Sprintf("process %s on node %s is %s", pc.name, pc.node, state)}, nil
	}
	if c.Type != "tcp" && c.Type != "http" {
		return plugins.Health{}, fmt.Errorf("a %s check: %w", c.Type, plugins.ErrCheckUnsupported)
	}
	var cp checkProps
	if len(c.Properties) > 0 {
		if err := json.Unmarshal(c.Properties, &cp); err != nil {
			return plugins.Health{}, fmt.Errorf("check %s: properties: %w", c.Name, err)
		}
	}
	pr, _ := decodeProps(r)
	node, err := p.node(ctx, r, pr)
	if err != nil {
		return plugins.Health{}, err
	}
	host := cp.Host
	if host == "" {
		host = "127.0.0.1"
	}
	port, err := cp.Port.Int64()
	if err != nil {
		return plugins.Health{}, fmt.Errorf("check %s: port %q is not a number", c.Name, cp.Port)
	}
	timeoutMS := max(c.Timeout.Milliseconds(), 1)
	switch c.Type {
	case "tcp":
		out, err := p.run(ctx, r, node, catalog.ActionNetTCP, map[string]any{"host": host, "port": port, "timeout_ms": timeoutMS})
		if err != nil {
			return plugins.Health{}, err
		}
		var res struct {
			Reachable bool   `json:"reachable"`
			Error     string `json:"error"`
		}
		if err := json.Unmarshal(out, &res); err != nil {
			return plugins.Health{}, err
		}
		return plugins.Health{Healthy: res.Reachable, Detail: res.Error}, nil
	case "http":
		scheme, path := cp.Scheme, cp.Path
		if scheme == "" {
			scheme = "http"
		}
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		url := fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(host, strconv.FormatInt(port, 10)), path)
		args := map[string]any{"url": url, "timeout_ms": timeoutMS}
		if cp.ExpectStatus != 0 {
			args["expect_status"] = cp.ExpectStatus
		}
		out, err := p.run(ctx, r, node, catalog.ActionNetHTTP, args)
		if err != nil {
			return plugins.Health{}, err
		}
		var res struct {
			Healthy bool   `json:"healthy"`
			Error   string `json:"error"`
		}
		if err := json.Unmarshal(out, &res); err != nil {
			return plugins.Health{}, err
		}
		return plugins.Health{Healthy: res.Healthy, Detail: res.Error}, nil
	}
	return plugins.Health{}, fmt.Errorf("a %s check: %w", c.Type, plugins.ErrCheckUnsupported)
}
