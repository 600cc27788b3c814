package schedule_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"cairn/domain"
	"cairn/domain/job"
	"cairn/domain/schedule"
)

var t0 = time.Date(2026, 3, 2, 8, 30, 15, 0, time.UTC) // a Monday

func TestCronNext(t *testing.T) {
	t.Parallel()
	cases := []struct {
		expr  string
		after time.Time
		want  []time.Time // successive firings
	}{
		{"* * * * *", t0, []time.Time{at("2026-03-02 08:31"), at("2026-03-02 08:32")}},
		{"*/15 * * * *", t0, []time.Time{at("2026-03-02 08:45"), at("2026-03-02 09:00"), at("2026-03-02 09:15")}},
		{"0 9-10 * * *", t0, []time.Time{at("2026-03-02 09:00"), at("2026-03-02 10:00"), at("2026-03-03 09:00")}},
		{"30 8 * * *", at("2026-03-02 08:30"), []time.Time{at("2026-03-03 08:30")}},
		{"0 0 1 * *", t0, []time.Time{at("2026-04-01 00:00"), at("2026-05-01 00:00")}},
		{"0 12 * * sat,sun", t0, []time.Time{at("2026-03-07 12:00"), at("2026-03-08 12:00"), at("2026-03-14 12:00")}},
		{"0 12 * * 7", t0, []time.Time{at("2026-03-08 12:00")}},
		{"0 0 29 feb *", t0, []time.Time{at("2028-02-29 00:00")}},
		// Both days restricted: either matches (the 13th, or any Friday).
		{"0 0 13 * 5", t0, []time.Time{at("2026-03-06 00:00"), at("2026-03-13 00:00"), at("2026-03-20 00:00")}},
		{"5/20 * * * *", t0, []time.Time{at("2026-03-02 08:45"), at("2026-03-02 09:05")}},
		{"0 0 * jan-mar/2 *", t0, []time.Time{at("2026-03-03 00:00")}},
		{"@hourly", t0, []time.Time{at("2026-03-02 09:00")}},
		{"@daily", t0, []time.Time{at("2026-03-03 00:00")}},
		{"@weekly", t0, []time.Time{at("2026-03-08 00:00")}},
		{"@monthly", t0, []time.Time{at("2026-04-01 00:00")}},
		{"@yearly", t0, []time.Time{at("2027-01-01 00:00")}},
		{"1,2,3 4 * * *", t0, []time.Time{at("2026-03-03 04:01"), at("2026-03-03 04:02"), at("2026-03-03 04:03"), at("2026-03-04 04:01")}},
	}
	for _, tc := range cases {
		c, err := schedule.ParseCron(tc.expr)
		if err != nil {
			t.Errorf("%q: %v", tc.expr, err)
			continue
		}
		after := tc.after
		for _, want := range tc.want {
			got := c.Next(after)
			if !got.Equal(want) {
				t.Errorf("%q after %s: got %s, want %s", tc.expr, after, got, want)
				break
			}
			after = got
		}
	}
}

func TestCronRefused(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"":               "has 0 fields",
		"* * * *":        "has 4 fields",
		"60 * * * *":     "minute field: 60 is outside 0-59",
		"* 24 * * *":     "hour field: 24 is outside 0-23",
		"* * 0 * *":      "day of month field: 0 is outside 1-31",
		"* * * 13 *":     "month field: 13 is outside 1-12",
		"* * * * 8":      "day of week field: 8 is outside 0-7",
		"*/0 * * * *":    "step \"0\" must be a positive number",
		"5-1 * * * *":    "runs backwards",
		"x * * * *":      "\"x\" is not a number",
		"1,,2 * * * *":   "empty list item",
		"0 0 30 2 *":     "never fires",
		"@fortnightly":   "unknown descriptor",
		"* * * * * *":    "has 6 fields",
		"* * * smarch *": "not a number",
	}
	for expr, want := range cases {
		_, err := schedule.ParseCron(expr)
		var ce *schedule.CronError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want an error containing %q", expr, err, want)
		}
	}
}

var tmpl = schedule.JobTemplate{
	Spec:    job.Spec{Kind: job.KindExec, Exec: &job.Exec{Argv: []string{"uptime"}}},
	Target:  job.Target{NodeID: "n1"},
	Timeout: time.Minute, Grace: time.Second,
}

func created(t *testing.T, c schedule.Create) schedule.Schedule {
	t.Helper()
	var s schedule.Schedule
	evs, err := s.Create(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		s.Apply(e)
	}
	return s
}

func TestIntervalNext(t *testing.T) {
	t.Parallel()
	s := created(t, schedule.Create{ScheduleID: "s1", Job: tmpl, Every: 10 * time.Minute, Submitter: "u", At: t0})
	cases := []struct{ after, want time.Time }{
		{t0.Add(-time.Hour), t0.Add(10 * time.Minute)},
		{t0, t0.Add(10 * time.Minute)},
		{t0.Add(10 * time.Minute), t0.Add(20 * time.Minute)},
		{t0.Add(25 * time.Minute), t0.Add(30 * time.Minute)},
	}
	for _, tc := range cases {
		if got := s.Next(tc.after); !got.Equal(tc.want) {
			t.Errorf("after %s: got %s, want %s", tc.after, got, tc.want)
		}
	}
	if got := s.JobIDAt(t0.Add(10 * time.Minute)); got != "s1.20260302T084015Z" {
		t.Errorf("job id %q", got)
	}
	cron := created(t, schedule.Create{ScheduleID: "s2", Job: tmpl, Cron: "0 * * * *", Submitter: "u", At: t0})
	if got := cron.Next(t0); !got.Equal(at("2026-03-02 09:00")) {
		t.Errorf("cron schedule next %s", got)
	}
}

func TestCreateRefused(t *testing.T) {
	t.Parallel()
	bad := tmpl
	bad.Spec = job.Spec{Kind: job.KindExec}
	cases := []struct {
		name  string
		c     schedule.Create
		field string
	}{
		{"no id", schedule.Create{Job: tmpl, Every: time.Minute, Submitter: "u", At: t0}, "scheduleId"},
		{"long id", schedule.Create{ScheduleID: strings.Repeat("a", 112), Job: tmpl, Every: time.Minute, Submitter: "u", At: t0}, "scheduleId"},
		{"no cadence", schedule.Create{ScheduleID: "s", Job: tmpl, Submitter: "u", At: t0}, "every"},
		{"both", schedule.Create{ScheduleID: "s", Job: tmpl, Every: time.Minute, Cron: "* * * * *", Submitter: "u", At: t0}, "cron"},
		{"too often", schedule.Create{ScheduleID: "s", Job: tmpl, Every: time.Millisecond, Submitter: "u", At: t0}, "every"},
		{"fractional", schedule.Create{ScheduleID: "s", Job: tmpl, Every: 1500 * time.Millisecond, Submitter: "u", At: t0}, "every"},
		{"bad cron", schedule.Create{ScheduleID: "s", Job: tmpl, Cron: "61 * * * *", Submitter: "u", At: t0}, "cron"},
		{"bad job", schedule.Create{ScheduleID: "s", Job: bad, Every: time.Minute, Submitter: "u", At: t0}, "job.spec.exec.argv"},
		{"no submitter", schedule.Create{ScheduleID: "s", Job: tmpl, Every: time.Minute, At: t0}, "job.submitter"},
		{"no time", schedule.Create{ScheduleID: "s", Job: tmpl, Every: time.Minute, Submitter: "u"}, "at"},
	}
	for _, tc := range cases {
		_, err := (schedule.Schedule{}).Create(tc.c)
		var v *domain.ValidationError
		if !errors.As(err, &v) || v.Field != tc.field {
			t.Errorf("%s: got %v, want a validation error on %s", tc.name, err, tc.field)
		}
	}
}

// Every command in every status: allowed ones decide an event, the others
// are refused with a state error naming the status.
func TestLifecycle(t *testing.T) {
	t.Parallel()
	base := created(t, schedule.Create{ScheduleID: "s1", Job: tmpl, Every: time.Minute, Submitter: "u", At: t0})
	states := map[schedule.Status]schedule.Schedule{}
	for _, st := range schedule.Statuses {
		s := base
		s.Status = st
		states[st] = s
	}
	at := t0.Add(time.Hour)
	run := map[string]func(schedule.Schedule) ([]domain.Event, error){
		schedule.CmdPause: func(s schedule.Schedule) ([]domain.Event, error) {
			return s.Pause(schedule.Pause{ScheduleID: "s1", At: at})
		},
		schedule.CmdResume: func(s schedule.Schedule) ([]domain.Event, error) {
			return s.Resume(schedule.Resume{ScheduleID: "s1", At: at})
		},
		schedule.CmdDelete: func(s schedule.Schedule) ([]domain.Event, error) {
			return s.Delete(schedule.Delete{ScheduleID: "s1", At: at})
		},
		schedule.CmdCreate: func(s schedule.Schedule) ([]domain.Event, error) {
			return s.Create(schedule.Create{ScheduleID: "s1", Job: tmpl, Every: time.Minute, Submitter: "u", At: at})
		},
	}
	for st, s := range states {
		for _, cmd := range schedule.Commands {
			evs, err := run[cmd](s)
			allowed := slices.Contains(schedule.Allowed[st], cmd)
			var se *domain.StateError
			switch {
			case allowed && (err != nil || len(evs) != 1):
				t.Errorf("%s in %s: got %v, %v; want one event", cmd, st, evs, err)
			case !allowed && (!errors.As(err, &se) || se.State != string(st)):
				t.Errorf("%s in %s: got %v; want a state error", cmd, st, err)
			}
			if allowed {
				next := s
				next.Apply(evs[0])
				if cmd == schedule.CmdPause && next.Status != schedule.StatusPaused ||
					cmd == schedule.CmdResume && next.Status != schedule.StatusActive ||
					cmd == schedule.CmdDelete && next.Status != schedule.StatusDeleted {
					t.Errorf("%s in %s: status %s after", cmd, st, next.Status)
				}
			}
		}
	}
	if got := states[schedule.StatusPaused].Next(t0); !got.IsZero() {
		t.Errorf("a paused schedule fires at %s", got)
	}
	var missing schedule.Schedule
	var nf *domain.NotFoundError
	if _, err := missing.Pause(schedule.Pause{ScheduleID: "x", At: at}); !errors.As(err, &nf) {
		t.Errorf("pause of a missing schedule: %v", err)
	}
}

func at(s string) time.Time {
	v, err := time.Parse("2006-01-02 15:04", s)
	if err != nil {
		panic(err)
	}
	return v
}
