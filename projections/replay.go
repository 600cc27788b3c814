package projections

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"cairn/eventstore"
)

// ReplayOptions say what to replay and how far.
type ReplayOptions struct {
	Projections []Projection
	// Views are made in the scratch schema too, over its tables.
	Views []View
	// Until is the last event included (zero: see UntilTime).
	Until eventstore.Cursor
	// UntilTime includes the events recorded at or before it. With neither
	// set, the whole log as it is now is replayed.
	UntilTime time.Time
}

// ReplayResult says what a replay built.
type ReplayResult struct {
	// Schema holds one table per read-model table and the derived views.
	Schema string
	// Cursor is the last event included.
	Cursor eventstore.Cursor
	Events int64
	// Failed lists events a projection could not apply; the replay went on
	// past them as a live projection would have parked them.
	Failed []ParkedEvent
}

// BeforeFirstEventError: the requested moment precedes the log.
type BeforeFirstEventError struct {
	Time  time.Time
	First time.Time
}

func (e *BeforeFirstEventError) Error() string {
	if e.First.IsZero() {
		return fmt.Sprintf("%s is before the first event: the log is empty", e.Time.UTC().Format(time.RFC3339Nano))
	}
	return fmt.Sprintf("%s is before the first event, recorded at %s: choose a later time",
		e.Time.UTC().Format(time.RFC3339Nano), e.First.UTC().Format(time.RFC3339Nano))
}

var replaySchemaPattern = regexp.MustCompile(`^replay_[a-z0-9_]{1,50}$`)

// Replay rebuilds projections into a new scratch schema as of a moment, so
// that the system can be queried as it was. The schema belongs to the
// application role, and is made through pool; DropReplay removes it.
func Replay(ctx context.Context, store Log, pool *pgxpool.Pool, o ReplayOptions) (ReplayResult, error) {
	var res ReplayResult
	if err := CheckCursor(ctx, store, o.Until); err != nil {
		return res, err
	}
	head, err := store.Head(ctx)
	if err != nil {
		return res, err
	}
	first, err := store.ReadAll(ctx, eventstore.Start, 1, eventstore.Filter{})
	if err != nil {
		return res, err
	}
	if !o.UntilTime.IsZero() && (len(first) == 0 || o.UntilTime.Before(first[0].RecordedAt)) {
		e := &BeforeFirstEventError{Time: o.UntilTime}
		if len(first) > 0 {
			e.First = first[0].RecordedAt
		}
		return res, e
	}
	limit := head
	if !o.Until.IsZero() {
		limit = o.Until
	}

	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	res.Schema = "replay_" + time.Now().UTC().Format("20060102t150405") + "_" + hex.EncodeToString(rnd[:])
	target := Target{Schema: res.Schema}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT cairn_create_replay_schema($1)`, res.Schema); err != nil {
			return fmt.Errorf("create scratch schema: %w", err)
		}
		var tables []string
		for _, p := range o.Projections {
			if err := p.Setup(ctx, tx, target); err != nil {
				return fmt.Errorf("set up %q: %w", p.Name(), err)
			}
			tables = append(tables, p.Tables()...)
		}
		return createViews(ctx, tx, o.Views, res.Schema, res.Schema, tables)
	})
	if err != nil {
		return ReplayResult{}, fmt.Errorf("replay: %w", err)
	}

	err = store.ReadRange(ctx, eventstore.Start, limit, 2000, eventstore.Filter{}, func(recs []eventstore.RecordedEvent) error {
		var page []Event
		for _, e := range decodeAll(store, recs) {
			if !o.UntilTime.IsZero() && e.RecordedAt.After(o.UntilTime) {
				continue
			}
			page = append(page, e)
			res.Cursor = e.Cursor()
		}
		res.Events += int64(len(page))
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			for _, p := range o.Projections {
				f := p.Filter()
				var evs []Event
				for i := range page {
					switch {
					case !f.match(&page[i]):
					case page[i].DecodeErr != nil && !f.Undecoded:
						res.Failed = append(res.Failed, failed(p, page[i], page[i].DecodeErr))
					default:
						evs = append(evs, page[i])
					}
				}
				if err := applyIsolated(ctx, tx, p, target, evs, &res.Failed); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return res, fmt.Errorf("replay: %w", err)
	}
	// Auditors query the replay at will: give it the live tables' indexes.
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		for _, p := range o.Projections {
			if err := p.Index(ctx, tx, target); err != nil {
				return fmt.Errorf("index %q: %w", p.Name(), err)
			}
		}
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("replay: %w", err)
	}
	return res, nil
}

// applyIsolated applies events inside a savepoint; when that fails it
// splits them until the failing events are alone, records those and applies
// the rest. Errors of the database itself end the replay.
func applyIsolated(ctx context.Context, tx pgx.Tx, p Projection, t Target, evs []Event, failures *[]ParkedEvent) error {
	if len(evs) == 0 {
		return nil
	}
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	err = p.Apply(ctx, sp, t, evs)
	if err == nil {
		return sp.Commit(ctx)
	}
	if rerr := sp.Rollback(ctx); rerr != nil {
		return rerr
	}
	if transient(err) || ctx.Err() != nil {
		return err
	}
	if len(evs) == 1 {
		*failures = append(*failures, failed(p, evs[0], err))
		return nil
	}
	mid := len(evs) / 2
	if err := applyIsolated(ctx, tx, p, t, evs[:mid], failures); err != nil {
		return err
	}
	return applyIsolated(ctx, tx, p, t, evs[mid:], failures)
}

func failed(p Projection, e Event, err error) ParkedEvent {
	return ParkedEvent{Projection: p.Name(), Cursor: e.Cursor(), StreamID: e.StreamID, EventType: e.Type, Attempts: 1,
		Error: err.Error(), ParkedAt: time.Now()}
}

// DropReplay removes a scratch schema made by Replay.
func DropReplay(ctx context.Context, db querier, schema string) error {
	if !replaySchemaPattern.MatchString(schema) {
		return fmt.Errorf("%q is not a replay schema: their names start with replay_", schema)
	}
	if _, err := db.Exec(ctx, `DROP SCHEMA `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
		return fmt.Errorf("drop replay schema %s: %w", schema, err)
	}
	return nil
}
