package models

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"cairn/domain/node"
	"cairn/projections"
)

// Nodes keeps one row per node (read.nodes) and the history of node
// statuses (read.node_status_periods), from which availability is derived.
type Nodes struct{}

func (Nodes) Name() string     { return "nodes" }
func (Nodes) Version() int     { return 1 }
func (Nodes) Tables() []string { return []string{"nodes", "node_status_periods"} }
func (Nodes) Filter() projections.Filter {
	return projections.Filter{StreamTypes: []string{"node"}}
}

func (Nodes) Setup(ctx context.Context, tx pgx.Tx, t projections.Target) error {
	_, err := tx.Exec(ctx, fmt.Sprintf(`
		CREATE TABLE %[1]s (
			id              text PRIMARY KEY,
			hostname        text NOT NULL,
			location_id     text,
			labels          jsonb NOT NULL,
			facts           json,
			facts_at        timestamptz,
			status          text NOT NULL,
			status_since    timestamptz,
			cordoned        boolean NOT NULL,
			drain_reason    text,
			enrolled_at     timestamptz,
			connected_at    timestamptz,
			disconnected_at timestamptz,
			last_seen_at    timestamptz,
			updated_at      timestamptz,
			stream_version  bigint NOT NULL,
			position        bigint NOT NULL
		) WITH (fillfactor = 80);
		CREATE TABLE %[2]s (
			node_id    text NOT NULL,
			status     text NOT NULL,
			started_at timestamptz NOT NULL,
			ended_at   timestamptz NOT NULL
		);`,
		t.Table("nodes"), t.Table("node_status_periods")))
	return err
}

func (Nodes) Index(ctx context.Context, tx pgx.Tx, t projections.Target) error {
	_, err := tx.Exec(ctx, fmt.Sprintf(`
		CREATE INDEX ON %[1]s (status, id);
		CREATE INDEX ON %[1]s (location_id, id);
		CREATE INDEX ON %[1]s USING gin (labels jsonb_path_ops);
		CREATE INDEX ON %[2]s (node_id, started_at);`,
		t.Table("nodes"), t.Table("node_status_periods")))
	return err
}

type nodeRow struct {
	node.Node
	facts       []byte // JSON of Facts as last reported
	statusSince pgtype.Timestamptz
	lastSeen    pgtype.Timestamptz
	version     int64
	position    int64
}

var nodeColumns = []column{
	{"id", kText}, {"hostname", kText}, {"location_id", kNText}, {"labels", kJSONB}, {"facts", kJSON},
	{"facts_at", kTime}, {"status", kText}, {"status_since", kTime}, {"cordoned", kBool}, {"drain_reason", kNText},
	{"enrolled_at", kTime}, {"connected_at", kTime}, {"disconnected_at", kTime}, {"last_seen_at", kTime},
	{"updated_at", kTime}, {"stream_version", kInt}, {"position", kInt},
}

var periodColumns = []column{{"node_id", kText}, {"status", kText}, {"started_at", kTime}, {"ended_at", kTime}}

func (Nodes) Apply(ctx context.Context, tx pgx.Tx, t projections.Target, evs []projections.Event) error {
	periods := newRowset(periodColumns...)
	rows, err := fold(ctx, tx, evs, "node", loadNodes(t), func(n *nodeRow, e *projections.Event) {
		prev := n.Status
		n.Node.Apply(e.Data)
		if n.ID == "" {
			n.ID = e.EntityID()
		}
		at := n.UpdatedAt
		if n.Status != prev {
			if prev != "" && n.statusSince.Valid && at.After(n.statusSince.Time) {
				periods.text(n.ID).text(string(prev)).time(n.statusSince.Time).time(at)
			}
			n.statusSince = pgtype.Timestamptz{Time: at, Valid: !at.IsZero()}
		}
		switch e.Data.(type) {
		case node.Connected, node.FactsReported:
			n.lastSeen = pgtype.Timestamptz{Time: at, Valid: !at.IsZero()}
		}
		if _, ok := e.Data.(node.FactsReported); ok {
			n.facts, _ = json.Marshal(n.Facts)
		}
		n.version, n.position = e.Version, e.Position
	})
	if err != nil {
		return err
	}
	out := newSplit(nodeColumns...)
	for _, f := range rows {
		n := f.state
		labels := n.Labels
		if labels == nil {
			labels = map[string]string{}
		}
		out.row(f.existed).text(n.ID).text(n.Hostname).ntext(n.LocationID).jsonbOf(labels).json(n.facts).
			time(n.FactsAt).text(string(n.Status)).time(ts(n.statusSince)).bool(n.Cordoned).ntext(n.DrainReason).
			time(n.EnrolledAt).time(n.ConnectedAt).time(n.DisconnectedAt).time(ts(n.lastSeen)).
			time(n.UpdatedAt).int(n.version).int(n.position)
	}
	return write(ctx, tx, append(out.writes(t.Table("nodes"), "id"), periods.insert(t.Table("node_status_periods"))...)...)
}

func loadNodes(t projections.Target) func(context.Context, pgx.Tx, []string) (map[string]*nodeRow, error) {
	sql := `SELECT id, hostname, coalesce(location_id, ''), labels::text, coalesce(facts::text, ''), facts_at, status,
		status_since, cordoned, coalesce(drain_reason, ''), enrolled_at, connected_at, disconnected_at, last_seen_at,
		updated_at, stream_version, position FROM ` + t.Table("nodes") + ` WHERE id = ANY($1)`
	return func(ctx context.Context, tx pgx.Tx, ids []string) (map[string]*nodeRow, error) {
		return loadRows(ctx, tx, sql, ids, func(rows pgx.Rows, n *nodeRow) (string, error) {
			var labels, facts, status string
			var factsAt, enrolled, connected, disconnected, updated pgtype.Timestamptz
			err := rows.Scan(&n.ID, &n.Hostname, &n.LocationID, &labels, &facts, &factsAt, &status, &n.statusSince,
				&n.Cordoned, &n.DrainReason, &enrolled, &connected, &disconnected, &n.lastSeen, &updated, &n.version, &n.position)
			if err != nil {
				return "", err
			}
			if err := json.Unmarshal([]byte(labels), &n.Labels); err != nil {
				return "", fmt.Errorf("node %q: labels: %w", n.ID, err)
			}
			n.Status = node.Status(status)
			n.FactsAt, n.EnrolledAt, n.ConnectedAt = ts(factsAt), ts(enrolled), ts(connected)
			n.DisconnectedAt, n.UpdatedAt = ts(disconnected), ts(updated)
			if facts != "" {
				n.facts = []byte(facts)
			}
			return n.ID, nil
		})
	}
}
