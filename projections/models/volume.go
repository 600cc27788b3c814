package models

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"cairn/projections"
)

// EventVolume counts events per UTC day, stream type and event type
// (read.event_volume). It reads every event but only its envelope, so an
// event whose payload does not decode still counts.
type EventVolume struct{}

func (EventVolume) Name() string     { return "event_volume" }
func (EventVolume) Version() int     { return 1 }
func (EventVolume) Tables() []string { return []string{"event_volume"} }
func (EventVolume) Filter() projections.Filter {
	return projections.Filter{Undecoded: true}
}

func (EventVolume) Setup(ctx context.Context, tx pgx.Tx, t projections.Target) error {
	_, err := tx.Exec(ctx, fmt.Sprintf(`
		CREATE TABLE %[1]s (
			day         date NOT NULL,
			stream_type text NOT NULL,
			event_type  text NOT NULL,
			events      bigint NOT NULL,
			first_at    timestamptz NOT NULL,
			last_at     timestamptz NOT NULL,
			PRIMARY KEY (day, stream_type, event_type)
		);`, t.Table("event_volume")))
	return err
}

type volumeKey struct {
	day               time.Time
	stream, eventType string
}

type volume struct {
	n           int64
	first, last time.Time
}

// Index has nothing to add: the primary key serves every query.
func (EventVolume) Index(context.Context, pgx.Tx, projections.Target) error { return nil }

func (EventVolume) Apply(ctx context.Context, tx pgx.Tx, t projections.Target, evs []projections.Event) error {
	counts := map[volumeKey]*volume{}
	var order []volumeKey
	for i := range evs {
		e := &evs[i]
		at := e.RecordedAt.UTC()
		k := volumeKey{day: time.Date(at.Year(), at.Month(), at.Day(), 0, 0, 0, 0, time.UTC), stream: e.StreamType, eventType: e.Type}
		v := counts[k]
		if v == nil {
			v = &volume{first: at, last: at}
			counts[k] = v
			order = append(order, k)
		}
		v.n++
		v.first, v.last = minTime(v.first, at), maxTime(v.last, at)
	}
	out := newRowset(column{"day", kDate}, column{"stream_type", kText}, column{"event_type", kText},
		column{"events", kInt}, column{"first_at", kTime}, column{"last_at", kTime})
	for _, k := range order {
		v := counts[k]
		out.date(k.day).text(k.stream).text(k.eventType).int(v.n).time(v.first).time(v.last)
	}
	return write(ctx, tx, out.upsert(t.Table("event_volume"), []string{"day", "stream_type", "event_type"},
		"events = t.events + EXCLUDED.events, first_at = least(t.first_at, EXCLUDED.first_at), last_at = greatest(t.last_at, EXCLUDED.last_at)")...)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
