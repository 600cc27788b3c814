package graph

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"cairn/auth"
	"cairn/commands"
	"cairn/commands/jobs"
	"cairn/dispatch"
	"cairn/domain"
	"cairn/domain/job"
	"cairn/domain/node"
	"cairn/eventstore"
	"cairn/graph/apierr"
	"cairn/graph/model"
	"cairn/graph/transport"
	"cairn/internal/ptr"
	"cairn/joblogs"
	"cairn/nodestats"
	"cairn/projections/readmodel"
)

// Jobs, job output, node statistics and the agent operations are served
// from the job streams and the dispatcher, not from read models: a job is
// read from its own stream, so it is always current.

// errNoJobs answers when the server was built without the job side.
var errNoJobs = apierr.New(apierr.CodeInternal, "this server does not run jobs")

func (r *Resolver) jobsReady() error {
	if r.deps.Jobs == nil || r.deps.Dispatch == nil || r.deps.Logs == nil || r.deps.Stats == nil {
		return errNoJobs
	}
	return nil
}

// loadedJob is a job with what its stream says beyond the domain state.
type loadedJob struct {
	job.Job
	version int64
	tenant  string // the tenant its submitter acted for
}

// loadJob folds a job's stream; the tenant comes from its first event.
func (r *Resolver) loadJob(ctx context.Context, id string) (loadedJob, error) {
	if id == "" {
		return loadedJob{}, apierr.InvalidInput("jobId", "is required")
	}
	evs, err := r.deps.Store.ReadStream(ctx, domain.StreamID(domain.JobStream, id), eventstore.ReadStreamOptions{})
	var nf *eventstore.StreamNotFoundError
	if errors.As(err, &nf) {
		return loadedJob{}, apierr.NotFound("job", id)
	}
	if err != nil {
		return loadedJob{}, err
	}
	var out loadedJob
	for i, rec := range evs {
		ev, err := r.deps.Store.Decode(rec)
		if err != nil {
			return loadedJob{}, err
		}
		if i == 0 {
			out.tenant = rec.Metadata.Tenant
		}
		out.Apply(ev)
	}
	out.version = int64(len(evs))
	return out, nil
}

// visibleJob loads a job the caller may read: to a tenant role another
// tenant's job, and to an agent another node's job, does not exist.
func (r *Resolver) visibleJob(ctx context.Context, id string) (loadedJob, error) {
	if err := r.jobsReady(); err != nil {
		return loadedJob{}, err
	}
	p, err := r.authorizeOwn(ctx, auth.JobRead)
	if err != nil {
		return loadedJob{}, err
	}
	j, err := r.loadJob(ctx, id)
	if err != nil {
		return j, err
	}
	if auth.Can(p, auth.JobRead, auth.Resource{TenantID: j.tenant, NodeID: j.NodeID}) != nil {
		return j, apierr.NotFound("job", id)
	}
	return j, nil
}

func (r *Resolver) jobPayload(ctx context.Context, out commands.Outcome) (*model.JobPayload, error) {
	p := &model.JobPayload{Cursor: model.Cursor(out.Cursor), Duplicate: out.Duplicate}
	if !selects(ctx, "job") {
		return p, nil
	}
	j, err := r.loadJob(ctx, out.ID)
	if err != nil {
		return nil, err
	}
	p.Job = jobModel(j)
	return p, nil
}

func jobModel(j loadedJob) *model.Job {
	out := &model.Job{
		ID: j.ID, ParentID: optional(j.ParentID), Spec: specModel(j.Spec), Target: targetModel(j.Target),
		TimeoutSeconds: seconds(j.Timeout), GraceSeconds: seconds(j.Grace),
		Retry:     &model.RetryPolicy{Max: j.Retries.Max, BackoffSeconds: j.Retries.Backoff.Seconds()},
		Queue:     optional(j.Queue),
		Submitter: j.Submitter, TenantID: optional(j.tenant), Status: model.JobStatus(upper(j.Status)),
		Attempt: j.Attempt, NodeID: optional(j.NodeID), LeaseUntil: timePtr(j.LeaseUntil), Acknowledged: j.Acknowledged,
		CancelReason: optional(j.CancelReason), LostReason: optional(j.LostReason),
		SubmittedAt: j.SubmittedAt, StartedAt: timePtr(j.StartedAt), FinishedAt: timePtr(j.FinishedAt),
		UpdatedAt: j.UpdatedAt, Version: int(j.version), AllowedActions: j.AllowedCommands(),
		ChildIDs: j.Children,
	}
	if out.AllowedActions == nil {
		out.AllowedActions = []string{}
	}
	if r := j.Result; r != nil {
		out.Result = &model.JobResult{ExitCode: r.ExitCode, Output: model.JSON(r.Output), Error: optional(r.Error),
			CPUTimeMs: r.CPUTimeMS, PeakMemoryBytes: r.PeakMemoryBytes}
	}
	if j.Status == job.StatusSucceeded || j.Status == job.StatusFailed || j.Status == job.StatusCancelled {
		if j.IsFanOut() {
			c := j.Counts
			out.Counts = &model.FanOutCounts{Succeeded: c.Succeeded, Failed: c.Failed, TimedOut: c.TimedOut, Cancelled: c.Cancelled, Lost: c.Lost}
		}
	}
	return out
}

func seconds(d time.Duration) int { return int(math.Ceil(d.Seconds())) }

func specModel(s job.Spec) *model.JobSpec {
	out := &model.JobSpec{Kind: model.JobKind(upper(s.Kind)), Action: optional(s.Action), Args: model.JSON(s.Args), SealedArgs: len(s.SecretArgs) > 0}
	if x := s.Exec; x != nil {
		e := &model.ExecSpec{Argv: slices.Clone(x.Argv), Env: []model.EnvVar{}, Stdin: optional(x.Stdin), Workdir: optional(x.Workdir)}
		for _, k := range slices.Sorted(maps.Keys(x.Env)) {
			e.Env = append(e.Env, model.EnvVar{Name: k, Value: x.Env[k]})
		}
		for _, k := range slices.Sorted(maps.Keys(x.SecretEnv)) {
			e.Env = append(e.Env, model.EnvVar{Name: k, Sealed: true})
		}
		out.Exec = e
	}
	if x := s.Script; x != nil {
		out.Script = &model.ScriptSpec{Interpreter: x.Interpreter, Body: x.Body}
	}
	return out
}

func targetModel(t job.Target) *model.JobTarget {
	out := &model.JobTarget{NodeID: optional(t.NodeID), Selector: labels(t.Selector), MaxParallel: t.MaxParallel,
		Requirements: requirementsModel(t.Requirements), Location: optional(t.Location), Every: t.Every}
	if t.Mode != "" {
		m := model.TargetMode(upper(t.Mode))
		out.Mode = &m
	}
	return out
}

// submitInput turns the API's submission into the command's.
func submitInput(in model.SubmitJobInput) (jobs.Submit, error) {
	out := jobs.Submit{JobID: ptr.Value(in.JobID), Queue: ptr.Value(in.Queue), Timeout: time.Hour, Grace: 10 * time.Second}
	if in.Spec == nil || in.Target == nil {
		return out, apierr.InvalidInput("spec", "spec and target are required")
	}
	sp := in.Spec
	out.Spec = job.Spec{Kind: job.Kind(strings.ToLower(string(sp.Kind))), Action: ptr.Value(sp.Action), Args: json.RawMessage(sp.Args)}
	out.Secrets.Args = json.RawMessage(sp.SecretArgs)
	if x := sp.Exec; x != nil {
		e := &job.Exec{Argv: x.Argv, Stdin: ptr.Value(x.Stdin), Workdir: ptr.Value(x.Workdir)}
		for _, v := range x.Env {
			m := &e.Env
			if ptr.Value(v.Secret) {
				m = &out.Secrets.Env
			}
			if *m == nil {
				*m = map[string]string{}
			}
			(*m)[v.Name] = v.Value
		}
		out.Spec.Exec = e
	}
	if x := sp.Script; x != nil {
		out.Spec.Script = &job.Script{Interpreter: x.Interpreter, Body: x.Body}
	}
	t := in.Target
	out.Target = job.Target{NodeID: ptr.Value(t.NodeID), Selector: labelMap(t.Selector),
		Requirements: requirementsInput(t.Requirements), Location: ptr.Value(t.Location), Every: ptr.Value(t.Every)}
	if m := ptr.Value(t.Match); m != "" {
		reqs, err := node.ParseSelector(m)
		if err != nil {
			return out, apierr.InvalidInput("target.match", "%s", domain.Reason(err))
		}
		out.Target.Requirements = append(out.Target.Requirements, reqs...)
	}
	if out.Target.IsSet() {
		out.Target.Mode = job.ModeAny
	}
	if t.Mode != nil {
		out.Target.Mode = job.Mode(strings.ToLower(string(*t.Mode)))
	}
	if t.MaxParallel != nil {
		out.Target.MaxParallel = *t.MaxParallel
	}
	if in.TimeoutSeconds != nil {
		if *in.TimeoutSeconds <= 0 {
			return out, apierr.InvalidInput("timeoutSeconds", "must be positive")
		}
		out.Timeout = time.Duration(*in.TimeoutSeconds) * time.Second
	}
	if in.GraceSeconds != nil {
		if *in.GraceSeconds < 0 {
			return out, apierr.InvalidInput("graceSeconds", "must not be negative")
		}
		// Zero means no grace: the command takes zero as "the default", so
		// ask for the least it can tell apart.
		out.Grace = max(time.Duration(*in.GraceSeconds)*time.Second, time.Millisecond)
	}
	if r := in.Retry; r != nil {
		out.Retry.Max = r.Max
		if r.BackoffSeconds != nil {
			if *r.BackoffSeconds < 0 || math.IsNaN(*r.BackoffSeconds) {
				return out, apierr.InvalidInput("retry.backoffSeconds", "must not be negative")
			}
			out.Retry.Backoff = time.Duration(*r.BackoffSeconds * float64(time.Second))
		}
	}
	return out, nil
}

// agentJob is an item of a node's feed for that node's agent: the one
// reader that gets the job's secrets in clear.
func (r *Resolver) agentJob(it dispatch.AgentJob) *model.AgentJob {
	if it.Job.Spec.Sealed() && r.deps.Jobs != nil {
		spec, err := r.deps.Jobs.Reveal(it.Job.Spec)
		if err != nil {
			// The agent fails the job for want of its secrets; the cause
			// (a lost or replaced key) is the operator's to see.
			r.log.Error().Err(err).Str("job", it.Job.ID).Msg("cannot open a job's secrets for its agent")
		} else {
			it.Job.Spec = spec
		}
	}
	return agentJobModel(it, "")
}

func agentJobModel(it dispatch.AgentJob, tenant string) *model.AgentJob {
	return &model.AgentJob{
		Cursor: model.Cursor(it.Cursor), Job: jobModel(loadedJob{Job: it.Job, tenant: tenant}),
		Attempt: it.Attempt, LeaseUntil: it.LeaseUntil, CancelRequested: it.CancelRequested,
	}
}

func logChunkModel(c joblogs.Chunk) *model.JobLogChunk {
	return &model.JobLogChunk{JobID: c.JobID, Seq: int(c.Seq), Stream: model.LogStream(upper(c.Stream)), Data: c.Data, Time: c.Time}
}

func factsInput(f *model.NodeFactsInput) node.Facts {
	if f == nil {
		return node.Facts{}
	}
	out := node.Facts{MemoryBytes: uint64(max(f.MemoryBytes, 0))}
	if f.CPU != nil {
		out.CPU = node.CPU{Model: f.CPU.Model, Cores: f.CPU.Cores, Threads: f.CPU.Threads}
	}
	if f.Os != nil {
		out.OS = node.OS{Name: f.Os.Name, Version: f.Os.Version, Kernel: f.Os.Kernel, Arch: f.Os.Arch}
	}
	for _, d := range f.Disks {
		out.Disks = append(out.Disks, node.Disk{Device: d.Device, Mountpoint: d.Mountpoint, Filesystem: d.Filesystem, SizeBytes: uint64(max(d.SizeBytes, 0))})
	}
	for _, n := range f.Network {
		out.Network = append(out.Network, node.Interface{Name: n.Name, MAC: n.Mac, Addresses: n.Addresses, MTU: n.Mtu})
	}
	return out
}

func statsInput(in []model.NodeStatSampleInput) []nodestats.Sample {
	out := make([]nodestats.Sample, len(in))
	for i, x := range in {
		s := nodestats.Sample{
			Time: x.Time, CPUPercent: x.CPUPercent, MemoryUsedBytes: x.MemoryUsedBytes, MemoryAvailableBytes: x.MemoryAvailableBytes,
			SwapUsedBytes: x.SwapUsedBytes, Load1: x.Load1, Load5: x.Load5, Load15: x.Load15,
		}
		for _, d := range x.Disks {
			s.Disks = append(s.Disks, nodestats.DiskUsage{Mountpoint: d.Mountpoint, UsedBytes: d.UsedBytes, FreeBytes: d.FreeBytes})
		}
		for _, n := range x.Network {
			s.Network = append(s.Network, nodestats.NetworkCounters{Name: n.Name, BytesReceived: n.BytesReceived, BytesSent: n.BytesSent,
				PacketsReceived: n.PacketsReceived, PacketsSent: n.PacketsSent, ErrorsIn: n.ErrorsIn, ErrorsOut: n.ErrorsOut})
		}
		out[i] = s
	}
	return out
}

func statModel(x nodestats.Sample) model.NodeStatSample {
	out := model.NodeStatSample{
		Time: x.Time, CPUPercent: x.CPUPercent, MemoryUsedBytes: x.MemoryUsedBytes, MemoryAvailableBytes: x.MemoryAvailableBytes,
		SwapUsedBytes: x.SwapUsedBytes, Load1: x.Load1, Load5: x.Load5, Load15: x.Load15,
		Disks: []model.DiskUsage{}, Network: []model.NetworkCounters{},
	}
	for _, d := range x.Disks {
		out.Disks = append(out.Disks, model.DiskUsage{Mountpoint: d.Mountpoint, UsedBytes: d.UsedBytes, FreeBytes: d.FreeBytes})
	}
	for _, n := range x.Network {
		out.Network = append(out.Network, model.NetworkCounters{Name: n.Name, BytesReceived: n.BytesReceived, BytesSent: n.BytesSent,
			PacketsReceived: n.PacketsReceived, PacketsSent: n.PacketsSent, ErrorsIn: n.ErrorsIn, ErrorsOut: n.ErrorsOut})
	}
	return out
}

// seqCursor pages job output: the page cursor is the seq of the last chunk.
func seqCursor(after *string) (int64, error) {
	if after == nil || *after == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(*after, 10, 64)
	if err != nil || n < 0 {
		return 0, apierr.InvalidInput("after", "%q is not a cursor of this log: pass an endCursor it returned", *after)
	}
	return n, nil
}

// pump delivers a stream's items to a subscription from one goroutine: it
// ends, telling the client why, when the stream ends, the session's token
// stops working, or the client goes away.
func pump[T any](ctx context.Context, ready <-chan struct{}, next func() (*T, bool, error), done func()) <-chan *T {
	out := make(chan *T, 1) // ready before the transport is told (push)
	sess := transport.SessionOf(ctx)
	var ended <-chan struct{}
	if sess != nil {
		ended = sess.Ended()
	}
	push := transport.Pushed(ctx)
	go func() {
		defer push.Closed()
		defer close(out)
		defer done()
		for {
			v, ok, err := next()
			switch {
			case ok:
				select {
				case out <- v:
					push.Sent()
				case <-ended:
					transport.EndWith(ctx, sess.Err())
					return
				case <-ctx.Done():
					return
				}
				continue
			case err != nil:
				if !errors.Is(err, context.Canceled) {
					transport.EndWith(ctx, err)
				}
				return
			}
			select {
			case <-ready:
			case <-ended:
				transport.EndWith(ctx, sess.Err())
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// agentFeedBuffer bounds the items waiting for a slow agent connection.
const agentFeedBuffer = 64

// agentCall authorizes an agent operation for a node: an agent acts only
// for its own node.
func (r *Resolver) agentCall(ctx context.Context, action auth.Action, nodeID string, commandID *string) (dispatch.Caller, error) {
	if err := r.jobsReady(); err != nil {
		return dispatch.Caller{}, err
	}
	if nodeID == "" {
		return dispatch.Caller{}, apierr.InvalidInput("nodeId", "is required")
	}
	if _, err := r.authorize(ctx, action, auth.Resource{NodeID: nodeID}); err != nil {
		return dispatch.Caller{}, err
	}
	return dispatch.Caller{NodeID: nodeID, CommandID: ptr.Value(commandID), CorrelationID: correlationID(ctx)}, nil
}

// requireSelectedNode refuses a target set that selects no node that is
// not decommissioned: such a job would wait for ever. A target that does
// not validate is left to the command, which says what is wrong with it.
func (r *Resolver) requireSelectedNode(ctx context.Context, t job.Target) error {
	if !t.IsSet() || t.Requirements.Validate("target.requirements") != nil {
		return nil
	}
	f := readmodel.NodeFilter{LocationID: t.Location, Labels: t.Selector}
	page := readmodel.Page{First: 500}
	for {
		conn, err := r.readModels(ctx).ListNodes(ctx, f, page)
		if err != nil {
			return err
		}
		for _, e := range conn.Edges {
			if e.Node.Status != node.StatusDecommissioned && t.Requirements.Matches(e.Node.Labels) {
				return nil
			}
		}
		if !conn.PageInfo.HasNextPage {
			break
		}
		page.After = conn.PageInfo.EndCursor
	}
	what := "no node"
	if sel := node.SelectorOf(t.Selector).String(); sel != "" || len(t.Requirements) > 0 {
		what = "no node matches " + strings.Trim(sel+","+t.Requirements.String(), ",")
	}
	if t.Location != "" {
		what += " in location " + t.Location
	}
	return apierr.InvalidInput("target", "%s: label a node to match, or change the target", what)
}
