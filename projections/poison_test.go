package projections_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"cairn/domain"
	"cairn/domain/job"
	"cairn/eventstore"
	"cairn/projections"
	"cairn/projections/models"
)

// picky fails on every event of one job, as a projection with a bug would.
type picky struct {
	projections.Projection
	bad string
}

var errPicky = errors.New("cannot handle this job")

func (p picky) Apply(ctx context.Context, tx pgx.Tx, t projections.Target, evs []projections.Event) error {
	for _, e := range evs {
		if s, ok := e.Data.(job.Submitted); ok && s.JobID == p.bad {
			return errPicky
		}
	}
	return p.Projection.Apply(ctx, tx, t, evs)
}

// insertRaw appends an event the registry cannot decode, as a newer build of
// Cairn (or a hand-edited database) might have written.
func insertRaw(t *testing.T, e env, stream, streamType, eventType string) eventstore.Cursor {
	t.Helper()
	var c eventstore.Cursor
	err := e.app.QueryRow(testCtx(t), `
		INSERT INTO events (stream_id, stream_type, version, event_type, schema_version, payload, metadata, recorded_at, prev_hash, hash)
		VALUES ($1, $2, (SELECT coalesce(max(version), 0) + 1 FROM events WHERE stream_id = $1), $3, 1, '{}', '{}', now(), '\x00', '\x00')
		RETURNING tx_id, position`, stream, streamType, eventType).Scan(&c.TxID, &c.Position)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A poison event is parked after its retries, visible in the list, the
// status and the metrics; its projection moves on (later events of the same
// stream included) and the other projections never notice.
func TestPoisonEventsAreParkedAndVisible(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	generate(t, e, 11, 400)
	ghost := insertRaw(t, e, "node-ghost", "node", "node.teleported")
	const bad = "g12job-9999"
	generate(t, e, 12, 400)
	if _, err := e.store.Append(testCtx(t), eventstore.AppendRequest{Streams: []eventstore.StreamAppend{{
		StreamID: "job-" + bad, StreamType: "job", Expected: eventstore.NoStream,
		Events: []domain.Event{job.Submitted{JobID: bad, Spec: job.Spec{Kind: job.KindAction, Action: "host.facts"},
			Target: job.Target{NodeID: "n"}, Submitter: "t", At: time.Now().UTC()}},
	}}}); err != nil {
		t.Fatal(err)
	}
	generate(t, e, 13, 300)

	ps := models.All()
	ps[1] = picky{Projection: models.Jobs{}, bad: bad}
	r := start(t, e, fastOptions(), ps...)
	waitAll(t, e, r.Runner)

	parked, err := r.Parked(testCtx(t), "", 10)
	if err != nil {
		t.Fatal(err)
	}
	byProjection := map[string]projections.ParkedEvent{}
	for _, p := range parked {
		byProjection[p.Projection] = p
	}
	if len(parked) != 2 {
		t.Fatalf("parked %d events, want 2: %+v", len(parked), parked)
	}
	if p := byProjection["nodes"]; p.Cursor != ghost || p.EventType != "node.teleported" || p.Attempts != 1 ||
		!strings.Contains(p.Error, "unknown event type") {
		t.Errorf("nodes parked %+v", p)
	}
	if p := byProjection["jobs"]; p.StreamID != "job-"+bad || p.Attempts != 3 || !strings.Contains(p.Error, errPicky.Error()) {
		t.Errorf("jobs parked %+v", p)
	}
	// event_volume reads envelopes only: the undecodable event counts.
	if _, ok := byProjection["event_volume"]; ok {
		t.Error("event_volume parked an event it does not need to decode")
	}
	for _, name := range []string{"nodes", "jobs"} {
		if s := statusOf(t, r.Runner, name, projections.StateLive); s.Parked != 1 || !s.CaughtUp {
			t.Errorf("%s status: parked %d, caught up %v", name, s.Parked, s.CaughtUp)
		}
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(r.Runner)
	metrics := gather(t, reg)
	for name, want := range map[string]float64{"jobs": 1, "nodes": 1, "services": 0, "event_volume": 0} {
		if got, ok := metrics[`cairn_projection_events_parked{projection="`+name+`",state="live"}`]; !ok || got != want {
			t.Errorf("parked metric of %s: %v (present %v), want %v", name, got, ok, want)
		}
		if got, ok := metrics[`cairn_projection_events_behind{projection="`+name+`",state="live"}`]; !ok || got != 0 {
			t.Errorf("events behind of %s: %v (present %v), want 0", name, got, ok)
		}
	}

	// Everything else was applied: the other jobs of the batch that held the
	// bad one, and every other projection in full.
	if n := count(t, e.app, `SELECT count(*) FROM read.jobs WHERE id = $1`, bad); n != 0 {
		t.Error("the parked job is in the read model")
	}
	total := count(t, e.app, `SELECT count(*) FROM events WHERE stream_type = 'job' AND version = 1`)
	if n := count(t, e.app, `SELECT count(*) FROM read.jobs`); n != total-1 {
		t.Errorf("read.jobs has %d jobs, want %d", n, total-1)
	}
	if got, all := count(t, e.app, `SELECT sum(events) FROM read.event_volume`), logSize(t, e); got != all {
		t.Errorf("event volume %d, log %d", got, all)
	}
	res, err := projections.Replay(testCtx(t), e.store, e.app, projections.ReplayOptions{Projections: models.All(), Views: models.AnalyticsViews(), Until: lastCursor(t, e)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failed) != 1 || res.Failed[0].Cursor != ghost {
		t.Fatalf("replay failed on %+v, want only the undecodable event", res.Failed)
	}
	for _, table := range []string{"nodes", "node_status_periods", "services", "resources", "templates", "tenants", "event_volume"} {
		sameRows(t, e.app, pgx.Identifier{"read", table}.Sanitize(), pgx.Identifier{res.Schema, table}.Sanitize())
	}
}

// gather reads a registry into "name{label="value",…}" → value.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
			}
			key := mf.GetName()
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			out[key] = m.GetGauge().GetValue()
		}
	}
	return out
}
