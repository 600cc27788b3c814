package dispatch_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"cairn/commands/jobs"
	"cairn/commands/schedules"
	"cairn/dispatch"
	"cairn/dispatch/dispatchtest"
	"cairn/domain"
	"cairn/domain/job"
	"cairn/domain/schedule"
	"cairn/eventstore"
	"cairn/joblogs"
	"cairn/nodestats"
)

// Output resent after a lost reply is stored once; pages and a live tail
// return it in order, and the tail completes when the job ends.
func TestJobLog(t *testing.T) {
	t.Parallel()
	e := start(t, fastOptions())
	e.enroll(nil, "n1")
	a := e.connect("n1", eventstore.Cursor{})
	id := e.submit(jobs.Submit{Spec: echo, Target: job.Target{NodeID: "n1"}})
	a.next()
	a.start(id)

	tail, err := e.Logs.Tail(ctxFor(t), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	chunk := func(seq int64) joblogs.Chunk {
		return joblogs.Chunk{Seq: seq, Stream: joblogs.StreamStdout, Data: fmt.Sprintf("line %d\n", seq), Time: time.Now()}
	}
	res, err := e.Dispatcher.AppendLog(ctxFor(t), a.caller(), id, []joblogs.Chunk{chunk(1), chunk(2)})
	if err != nil || res.Accepted != 2 || res.LastSeq != 2 {
		t.Fatalf("append: %+v, %v", res, err)
	}
	// The reply was lost: the agent sends 2 again with 3.
	res, err = e.Dispatcher.AppendLog(ctxFor(t), a.caller(), id, []joblogs.Chunk{chunk(2), chunk(3)})
	if err != nil || res.Accepted != 1 || res.LastSeq != 3 {
		t.Fatalf("resend: %+v, %v", res, err)
	}
	for want := int64(1); want <= 3; want++ {
		select {
		case c := <-tail.C:
			if c.Seq != want || c.Data != fmt.Sprintf("line %d\n", want) {
				t.Fatalf("tail chunk %+v, want seq %d", c, want)
			}
		case <-time.After(wait):
			t.Fatalf("tail did not deliver seq %d", want)
		}
	}
	a.finish(id, job.StatusSucceeded, 0)
	select {
	case c, ok := <-tail.C:
		if ok {
			t.Fatalf("tail delivered %+v after the end", c)
		}
	case <-time.After(wait):
		t.Fatal("tail did not complete when the job ended")
	}
	if err := tail.Err(); err != nil {
		t.Errorf("tail error %v", err)
	}
	page, more, err := e.Logs.Page(ctxFor(t), id, 1, 1)
	if err != nil || !more || len(page) != 1 || page[0].Seq != 2 {
		t.Errorf("page after 1: %+v, %v, %v", page, more, err)
	}
	if _, err := e.Logs.Tail(ctxFor(t), "no-such-job", 0); !isA[*domain.NotFoundError](err) {
		t.Errorf("tail of an unknown job: %v", err)
	}
	bad := []joblogs.Chunk{{Seq: 4, Stream: "stdin", Data: "x", Time: time.Now()}}
	if _, err := e.Dispatcher.AppendLog(ctxFor(t), a.caller(), id, bad); !isA[*domain.ValidationError](err) {
		t.Errorf("chunk of stream stdin: %v", err)
	}
	nul := []joblogs.Chunk{{Seq: 4, Stream: joblogs.StreamStdout, Data: "a\x00b", Time: time.Now()}}
	if _, err := e.Dispatcher.AppendLog(ctxFor(t), a.caller(), id, nul); !isA[*domain.ValidationError](err) {
		t.Errorf("chunk with NUL: %v", err)
	}

	// Retention deletes what was stored before the cutoff.
	n, err := e.Logs.Purge(ctxFor(t), time.Now().Add(time.Hour))
	if err != nil || n != 3 {
		t.Errorf("purge: %d, %v", n, err)
	}
}

// Statistics samples are stored once per instant and read back as a time
// series, downsampled to the points asked for.
func TestStatistics(t *testing.T) {
	t.Parallel()
	e := start(t, fastOptions())
	e.enroll(nil, "n1")
	caller := dispatch.Caller{NodeID: "n1"}
	base := time.Now().UTC().Truncate(time.Second).Add(-time.Hour)
	var samples []nodestats.Sample
	for i := range 100 {
		samples = append(samples, nodestats.Sample{
			Time: base.Add(time.Duration(i) * time.Second), CPUPercent: float64(i), MemoryUsedBytes: int64(i) * 1000,
			Load1: 1, Disks: []nodestats.DiskUsage{{Mountpoint: "/", UsedBytes: int64(i), FreeBytes: 100}},
			Network: []nodestats.NetworkCounters{{Name: "eth0", BytesReceived: int64(i)}},
		})
	}
	n, err := e.Dispatcher.ReportStats(ctxFor(t), caller, samples)
	if err != nil || n != 100 {
		t.Fatalf("report: %d, %v", n, err)
	}
	if n, err := e.Dispatcher.ReportStats(ctxFor(t), caller, samples[90:]); err != nil || n != 0 {
		t.Fatalf("report again: %d, %v", n, err)
	}
	all, err := e.Stats.Query(ctxFor(t), "n1", time.Time{}, time.Time{}, 500)
	if err != nil || len(all) != 100 || all[99].CPUPercent != 99 || all[99].Network[0].BytesReceived != 99 {
		t.Fatalf("query: %d samples, %v", len(all), err)
	}
	ten, err := e.Stats.Query(ctxFor(t), "n1", base, base.Add(100*time.Second), 10)
	if err != nil || len(ten) != 10 {
		t.Fatalf("downsampled: %d samples, %v", len(ten), err)
	}
	// Bucket 0 holds samples 0..9: mean CPU 4.5, the last disk figure 9.
	if ten[0].CPUPercent != 4.5 || ten[0].Disks[0].UsedBytes != 9 || !ten[0].Time.Equal(base) {
		t.Errorf("first bucket %+v", ten[0])
	}
	window, err := e.Stats.Query(ctxFor(t), "n1", base.Add(10*time.Second), base.Add(20*time.Second), 500)
	if err != nil || len(window) != 10 || window[0].CPUPercent != 10 {
		t.Errorf("window: %d, %v", len(window), err)
	}
	future := []nodestats.Sample{{Time: time.Now().Add(time.Hour)}}
	if _, err := e.Dispatcher.ReportStats(ctxFor(t), caller, future); !isA[*domain.ValidationError](err) {
		t.Errorf("sample from the future: %v", err)
	}
	if n, err := e.Stats.Purge(ctxFor(t), time.Now().Add(time.Hour)); err != nil || n != 100 {
		t.Errorf("purge: %d, %v", n, err)
	}
}

// A schedule submits its job at each of its instants, under ids derived
// from the instant; pausing it stops the firings.
func TestSchedule(t *testing.T) {
	t.Parallel()
	e := start(t, fastOptions())
	e.enroll(nil, "n1")
	a := e.connect("n1", eventstore.Cursor{})
	tmpl := schedule.JobTemplate{Spec: echo, Target: job.Target{NodeID: "n1"}}
	if _, err := e.Schedules.Create(ctxFor(t), dispatchtest.Operator, schedules.Create{ScheduleID: "tick", Job: tmpl, Every: time.Second}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 2 {
		it := a.next()
		if !strings.HasPrefix(it.Job.ID, "tick.") || it.Job.Submitter != dispatchtest.Operator.Actor {
			t.Fatalf("fired %+v", it.Job)
		}
		ids = append(ids, it.Job.ID)
		a.run(it.Job.ID, job.StatusSucceeded)
	}
	if ids[0] == ids[1] {
		t.Fatalf("two firings under one id %s", ids[0])
	}
	if _, err := e.Schedules.Pause(ctxFor(t), dispatchtest.Operator, "tick"); err != nil {
		t.Fatal(err)
	}
	// Firings the dispatcher decided before it saw the pause may still be on
	// their way, more than one on a loaded machine; then they stop: two
	// periods pass without one, and none comes long after the pause.
	pausedAt := time.Now()
	for stopped := false; !stopped; {
		select {
		case it := <-a.items:
			if time.Since(pausedAt) > wait {
				t.Fatalf("still firing %s after the pause: %s", time.Since(pausedAt), it.Job.ID)
			}
			a.run(it.Job.ID, job.StatusSucceeded)
		case <-time.After(2 * time.Second):
			stopped = true
		}
	}

	bad := schedule.JobTemplate{Spec: job.Spec{Kind: job.KindAction, Action: "sal.nope"}, Target: job.Target{NodeID: "n1"}}
	if _, err := e.Schedules.Create(context.Background(), dispatchtest.Operator, schedules.Create{ScheduleID: "bad", Job: bad, Every: time.Minute}); !isA[*domain.ValidationError](err) {
		t.Errorf("schedule of an unknown action: %v", err)
	}
	if _, err := e.Schedules.Create(context.Background(), dispatchtest.Operator, schedules.Create{ScheduleID: "cron", Job: tmpl, Cron: "0 25 * * *"}); !isA[*domain.ValidationError](err) {
		t.Errorf("schedule with a bad cron expression: %v", err)
	}
}
