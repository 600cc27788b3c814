package projections

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

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

// lockViews takes every stable view a switch changes, in one fixed order,
// waiting at most a moment. A reader whose query uses two of them may hold
// one while waiting for the other: with no bound the switch and the reader
// could deadlock, and PostgreSQL would cancel one of them. Bounded below the
// deadlock timeout, the switch gives way instead and is tried again, and
// readers never fail.
func lockViews(ctx context.Context, tx pgx.Tx, b buildRow, old *buildRow) error {
	names := slices.Clone(b.Tables)
	if old != nil {
		for _, t := range old.Tables {
			if !slices.Contains(names, t) {
				names = append(names, t)
			}
		}
	}
	slices.Sort(names)
	var views []string
	for _, n := range names {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, ReadSchema+"."+n).Scan(&exists); err != nil {
			return err
		}
		if exists {
			views = append(views, pgx.Identifier{ReadSchema, n}.Sanitize())
		}
	}
	if len(views) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '200ms'`); err != nil {
		return err
	}
	// The bound stays for the rest of the switch, which may also remake
	// analytics views that readers hold.
	_, err := tx.Exec(ctx, `LOCK TABLE `+strings.Join(views, ", ")+` IN ACCESS EXCLUSIVE MODE`)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "55P03" {
		return errViewsBusy
	}
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
