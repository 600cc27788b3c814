// Package models holds Cairn's read-model projections: nodes, jobs, the
// service catalog, services with their resources, tenancy (tenants, users,
// API tokens, locations) and event volume, and the analytics views over
// them. Each projection folds events with the domain aggregates' own Apply,
// so a read model never disagrees with what a command would decide from.
package models

import (
	"context"

	"github.com/jackc/pgx/v5"

	"cairn/projections"
)

// All returns every read-model projection, in the order they are listed.
func All() []projections.Projection {
	return []projections.Projection{Nodes{}, Jobs{}, Catalog{}, Services{}, Tenancy{}, EventVolume{}, Capacity{}}
}

// Names lists the projections All returns.
func Names() []string {
	var out []string
	for _, p := range All() {
		out = append(out, p.Name())
	}
	return out
}

// folded is an entity after a batch, and whether its row existed before.
type folded[S any] struct {
	state   *S
	existed bool
}

// fold applies the events of one stream type to their entities: it loads
// the current rows of every entity the events touch (one query), applies the
// events in order and returns the entities in the order they were first
// touched, for one set-based write.
func fold[S any](ctx context.Context, tx pgx.Tx, evs []projections.Event, streamType string,
	load func(ctx context.Context, tx pgx.Tx, ids []string) (map[string]*S, error),
	apply func(s *S, e *projections.Event)) ([]folded[S], error) {
	var ids, known []string
	seen := map[string]bool{}
	for i := range evs {
		if evs[i].StreamType != streamType {
			continue
		}
		if id := evs[i].EntityID(); !seen[id] {
			seen[id] = true
			ids = append(ids, id)
			// An entity whose first event here opens its stream has no row
			// yet: only the others are looked up.
			if evs[i].Version > 1 {
				known = append(known, id)
			}
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	states := map[string]*S{}
	if len(known) > 0 {
		var err error
		if states, err = load(ctx, tx, known); err != nil {
			return nil, err
		}
	}
	existed := make(map[string]bool, len(states))
	for id := range states {
		existed[id] = true
	}
	for i := range evs {
		e := &evs[i]
		if e.StreamType != streamType {
			continue
		}
		id := e.EntityID()
		s := states[id]
		if s == nil {
			s = new(S)
			states[id] = s
		}
		apply(s, e)
	}
	out := make([]folded[S], 0, len(ids))
	for _, id := range ids {
		out = append(out, folded[S]{state: states[id], existed: existed[id]})
	}
	return out, nil
}

// loadRows runs a query for the rows of ids and scans each into a new S
// keyed by the id scan returns.
func loadRows[S any](ctx context.Context, tx pgx.Tx, sql string, ids []string, scan func(pgx.Rows, *S) (string, error)) (map[string]*S, error) {
	rows, err := tx.Query(ctx, sql, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[string]*S, len(ids))
	for rows.Next() {
		s := new(S)
		id, err := scan(rows, s)
		if err != nil {
			return nil, err
		}
		out[id] = s
	}
	return out, rows.Err()
}
