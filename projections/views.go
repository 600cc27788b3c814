package projections

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// AnalyticsRole may read the analytics schema and nothing else.
const AnalyticsRole = "cairn_analytics"

// View is a view derived from the stable read views: the analytics schema is
// made of them. Views read the stable views, never a build's tables, so a
// rebuild's switch carries them along.
type View struct {
	Schema string
	Name   string
	// Needs names the read tables the query selects from; the view is only
	// created where all of them exist.
	Needs []string
	// Query is the view's SELECT. "{read}." stands for the schema of the read
	// tables and "{views}." for where the other derived views are, so the
	// same views can be made over an auditor's replay.
	Query string
}

// ReplayViewPrefix starts the names of derived views in a replay's scratch
// schema, where the read tables use the plain names (analytics_job_outcomes
// next to jobs).
const ReplayViewPrefix = "analytics_"

func (v View) sql(readSchema, viewSchema, prefix string) string {
	q := strings.ReplaceAll(v.Query, "{read}.", pgx.Identifier{readSchema}.Sanitize()+".")
	return strings.ReplaceAll(q, "{views}.", pgx.Identifier{viewSchema}.Sanitize()+"."+prefix)
}

// errViewsBusy: readers held the views longer than a switch may wait.
var errViewsBusy = errors.New("the views are busy with long reads; the switch will be tried again")

// switchWait is how long a switch waits for the readers of the views after
// it gave way busy times in a row: 100 ms, doubling each time. lockViews
// caps it.
func switchWait(busy int) time.Duration {
	return 100 * time.Millisecond << min(busy, 4)
}

// lockViews takes every stable view a switch changes, and the derived views
// over them that a switch may remake, in one statement. A reader whose query
// uses two of them may hold one while waiting for another the switch already
// has: the switch and the reader deadlock, and PostgreSQL cancels whichever
// has waited a deadlock timeout, possibly the reader. So the whole statement
// is bounded (a bound per lock would not do: the reader may have started
// waiting during an earlier one) to two fifths of the deadlock timeout; the
// switch gives way instead, is tried again, and readers never fail. Once it
// holds them all it waits on no reader. The bound is wait: a switch that
// keeps giving way waits longer on its next try (see switchWait), or on a
// loaded database with busy readers it might never get its turn.
func lockViews(ctx context.Context, tx pgx.Tx, b buildRow, old *buildRow, derived []View, wait time.Duration) error {
	names := slices.Clone(b.Tables)
	if old != nil {
		for _, t := range old.Tables {
			if !slices.Contains(names, t) {
				names = append(names, t)
			}
		}
	}
	candidates := make([]string, 0, len(names)+len(derived))
	for _, n := range names {
		candidates = append(candidates, ReadSchema+"."+n)
	}
	for _, v := range derived {
		if slices.ContainsFunc(v.Needs, func(n string) bool { return slices.Contains(names, n) }) {
			candidates = append(candidates, v.Schema+"."+v.Name)
		}
	}
	var views []string
	for _, c := range candidates {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, c).Scan(&exists); err != nil {
			return err
		}
		if exists {
			schema, name, _ := strings.Cut(c, ".")
			views = append(views, pgx.Identifier{schema, name}.Sanitize())
		}
	}
	if len(views) == 0 {
		return nil
	}
	slices.Sort(views)
	if _, err := tx.Exec(ctx, `SELECT set_config('statement_timeout',
		least($1::bigint, (extract(epoch FROM current_setting('deadlock_timeout')::interval) * 400)::bigint)::text || 'ms', true)`,
		wait.Milliseconds()); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `LOCK TABLE `+strings.Join(views, ", ")+` IN ACCESS EXCLUSIVE MODE`)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "57014" /* query_canceled: the bound */ && ctx.Err() == nil {
		return errViewsBusy
	}
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `SET LOCAL statement_timeout TO DEFAULT`)
	return err
}

// pointViews points the stable views of a build's tables at them, and drops
// the views of tables the build no longer has. It reports whether a view had
// to be dropped and made again (its columns changed incompatibly), which also
// drops the derived views over it.
func pointViews(ctx context.Context, tx pgx.Tx, b buildRow, old *buildRow) (bool, error) {
	recreated := false
	t := b.target()
	for _, name := range b.Tables {
		view := pgx.Identifier{ReadSchema, name}.Sanitize()
		again, err := replaceView(ctx, tx, view, `SELECT * FROM `+t.Table(name))
		if err != nil {
			return false, fmt.Errorf("point view %s at build %d of %q: %w", view, b.Build, b.Name, err)
		}
		recreated = recreated || again
	}
	if old != nil {
		for _, name := range old.Tables {
			if slices.Contains(b.Tables, name) {
				continue
			}
			if _, err := tx.Exec(ctx, `DROP VIEW IF EXISTS `+pgx.Identifier{ReadSchema, name}.Sanitize()+` CASCADE`); err != nil {
				return false, fmt.Errorf("drop view of table %q that build %d of %q no longer has: %w", name, b.Build, b.Name, err)
			}
			recreated = true
		}
	}
	return recreated, nil
}

// replaceView makes view read query. CREATE OR REPLACE keeps views that
// depend on it and only takes a moment's lock; when the columns changed in a
// way it cannot follow, the view is dropped (with its dependents) and made
// again, and replaceView reports it.
func replaceView(ctx context.Context, tx pgx.Tx, view, query string) (bool, error) {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return false, err
	}
	if _, err := sp.Exec(ctx, `CREATE OR REPLACE VIEW `+view+` AS `+query); err == nil {
		return false, sp.Commit(ctx)
	}
	if err := sp.Rollback(ctx); err != nil {
		return false, err
	}
	if _, err := tx.Exec(ctx, `DROP VIEW IF EXISTS `+view+` CASCADE`); err != nil {
		return false, err
	}
	if _, err := tx.Exec(ctx, `CREATE VIEW `+view+` AS `+query); err != nil {
		return false, err
	}
	return true, nil
}

// createViews makes the derived views whose needs are all among have,
// reading the read tables in readSchema; views in the analytics schema are
// granted to the analytics role. With intoSchema (a replay) every view is
// made there instead, its name prefixed with ReplayViewPrefix.
func createViews(ctx context.Context, tx pgx.Tx, views []View, readSchema, intoSchema string, have []string) error {
	for _, v := range views {
		if !containsAll(have, v.Needs) {
			continue
		}
		schema, prefix := v.Schema, ""
		if intoSchema != "" {
			schema, prefix = intoSchema, ReplayViewPrefix
		}
		name := pgx.Identifier{schema, prefix + v.Name}.Sanitize()
		if _, err := replaceView(ctx, tx, name, v.sql(readSchema, schema, prefix)); err != nil {
			return fmt.Errorf("create view %s: %w", name, err)
		}
		if schema == AnalyticsSchema {
			if _, err := tx.Exec(ctx, `GRANT SELECT ON `+name+` TO `+AnalyticsRole); err != nil {
				return fmt.Errorf("grant %s to %s: %w", name, AnalyticsRole, err)
			}
		}
	}
	return nil
}

func containsAll(have, need []string) bool {
	for _, n := range need {
		if !slices.Contains(have, n) {
			return false
		}
	}
	return true
}
