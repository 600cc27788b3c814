package dispatch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"time"

	"cairn/commands"
	"cairn/commands/jobs"
	"cairn/domain"
	"cairn/domain/job"
	"cairn/eventstore"
)

// actFanOut drives a fan-out: spawn its children once, then complete it when
// every child has ended for good.
func (d *Dispatcher) actFanOut(e *jobEntry, now time.Time) {
	switch e.j.Status {
	case job.StatusQueued:
		d.spawn(e, now)
	case job.StatusRunning, job.StatusCancelling:
		if e.fan.ended < len(e.j.Children) {
			return // children still running: no need to look at each
		}
		for _, c := range e.j.Children {
			if !e.fan.children[c] {
				return
			}
		}
		counts := e.fan.counts
		d.command(e, "complete fan-out", func(ctx context.Context) (commands.Outcome, error) {
			return d.jobsH.CompleteFanOut(ctx, d.meta(e.tenant), jobs.CompleteFanOut{JobID: e.j.ID, Counts: counts})
		})
	default:
		if e.j.Terminal() {
			d.drop(e)
		}
	}
}

// spawn submits one child job per node the selector matches now (online and
// not cordoned), each pinned to its node, and records them on the fan-out —
// all in one append, so a crash leaves either no child or all of them. The
// children's ids derive from the parent's, so the append repeated after a
// crash is refused rather than doubled.
func (d *Dispatcher) spawn(e *jobEntry, now time.Time) {
	var targets []string
	for id, n := range d.nodes {
		if e.j.Target.Selects(n.n) && n.n.Schedulable() {
			targets = append(targets, id)
		}
	}
	slices.Sort(targets)
	parent, version, tenant := e.j, e.version, e.tenant
	var appended []eventstore.StreamAppend
	d.launchFor(e, "fan out", func(ctx context.Context) (out commands.Outcome, err error) {
		out, appended, err = d.appendFanOut(ctx, parent, version, tenant, targets, now)
		return out, err
	}, func(out commands.Outcome, err error) {
		if err == nil && !out.Duplicate {
			d.applyAppended(tenant, appended)
		}
	})
}

// applyAppended applies what the dispatcher appended itself, as the
// subscription will bring it back (which then finds it applied): the
// children of a fan-out to 10,000 nodes are leased at once rather than
// after their 10,000 events were read back and decoded, a second later.
func (d *Dispatcher) applyAppended(tenant string, streams []eventstore.StreamAppend) {
	for _, st := range streams {
		if st.Expected == eventstore.AnyVersion {
			continue // its versions are not known here: the subscription brings them
		}
		version := int64(st.Expected)
		for _, ev := range st.Events {
			version++
			d.applyJob(eventstore.RecordedEvent{
				StreamID: st.StreamID, StreamType: st.StreamType, Version: version, Type: ev.EventType(),
				Metadata: eventstore.Metadata{Tenant: tenant},
			}, ev)
		}
	}
}

// appendFanOut appends a fan-out's children and its record of them, and
// returns what it appended.
func (d *Dispatcher) appendFanOut(ctx context.Context, parent job.Job, version int64, tenant string, targets []string, at time.Time) (commands.Outcome, []eventstore.StreamAppend, error) {
	ids := make([]string, len(targets))
	req := eventstore.AppendRequest{
		CommandID: "fanout:" + parent.ID,
		Metadata:  eventstore.Metadata{Actor: Actor, Tenant: tenant, CausationID: parent.ID},
	}
	for i, nodeID := range targets {
		ids[i] = ChildID(parent.ID, i+1)
		evs, err := (job.Job{}).Submit(job.Submit{
			JobID: ids[i], ParentID: parent.ID, Spec: parent.Spec, Target: job.Target{NodeID: nodeID},
			Timeout: parent.Timeout, Grace: parent.Grace, Retry: parent.Retries, Queue: parent.Queue,
			Submitter: parent.Submitter, At: at,
		})
		if err != nil {
			return commands.Outcome{}, nil, fmt.Errorf("child %d of fan-out %q: %w", i+1, parent.ID, err)
		}
		req.Streams = append(req.Streams, eventstore.StreamAppend{
			StreamID: domain.StreamID(domain.JobStream, ids[i]), StreamType: domain.JobStream,
			Expected: eventstore.NoStream, Events: evs,
		})
	}
	spawned, err := parent.SpawnChildren(job.SpawnChildren{JobID: parent.ID, ChildIDs: ids, At: at})
	if err != nil {
		return commands.Outcome{}, nil, err
	}
	req.Streams = append(req.Streams, eventstore.StreamAppend{
		StreamID: domain.StreamID(domain.JobStream, parent.ID), StreamType: domain.JobStream,
		Expected: eventstore.Exactly(version), Events: spawned,
	})
	fp, err := commands.Fingerprint("job.fan_out", parent.ID, ids)
	if err != nil {
		return commands.Outcome{}, nil, err
	}
	req.Fingerprint = fp
	res, err := d.store.Append(ctx, req)
	if err != nil {
		return commands.Outcome{}, nil, err
	}
	if !res.Duplicate { // a duplicate's events are the first spawn's, not these
		children, parentStream := req.Streams[:len(req.Streams)-1], req.Streams[len(req.Streams)-1]
		for _, st := range children {
			d.written.Wrote(st.StreamID, 0, tenant, st.Events)
		}
		d.written.Wrote(parentStream.StreamID, version, tenant, parentStream.Events)
	}
	return commands.Outcome{Result: commands.ResultFor(res, domain.JobStream, parent.ID), ID: parent.ID}, req.Streams, nil
}

// ChildID is the id of a fan-out's n-th child (from 1): the parent's id and
// the number, or, for a parent id too long for that, a digest of it.
func ChildID(parentID string, n int) string {
	suffix := "." + strconv.Itoa(n)
	if len(parentID)+len(suffix) <= 128 {
		return parentID + suffix
	}
	sum := sha256.Sum256([]byte(parentID))
	return "fanout-" + hex.EncodeToString(sum[:16]) + suffix
}
