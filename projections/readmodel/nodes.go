package readmodel

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"cairn/domain/node"
)

// Node is a node as the nodes projection keeps it.
type Node struct {
	ID          string
	Hostname    string
	LocationID  string
	Labels      map[string]string
	Facts       *node.Facts // nil before the first report
	FactsAt     time.Time
	Status      node.Status
	StatusSince time.Time
	Cordoned    bool
	DrainReason string
	EnrolledAt  time.Time
	ConnectedAt time.Time
	// DisconnectedAt is the last disconnection.
	DisconnectedAt time.Time
	// LastSeenAt is the last time the agent showed it was there (connected,
	// reported facts).
	LastSeenAt time.Time
	UpdatedAt  time.Time
	// Version of the node's stream, and Position of its last event.
	Version  int64
	Position int64
}

// NodeFilter narrows a node list. Empty fields match every node.
type NodeFilter struct {
	Status []node.Status
	// Labels: nodes carrying every one of these.
	Labels     map[string]string
	LocationID string
	// Hostname: a case-insensitive substring.
	Hostname string
}

const nodeColumns = `id, hostname, coalesce(location_id, ''), labels::text, coalesce(facts::text, ''), facts_at, status,
	status_since, cordoned, coalesce(drain_reason, ''), enrolled_at, connected_at, disconnected_at, last_seen_at,
	updated_at, stream_version, position`

func scanNode(rows pgx.Row) (Node, error) {
	var n Node
	var labels, facts, status string
	var factsAt, since, enrolled, connected, disconnected, seen, updated pgtype.Timestamptz
	err := rows.Scan(&n.ID, &n.Hostname, &n.LocationID, &labels, &facts, &factsAt, &status, &since, &n.Cordoned,
		&n.DrainReason, &enrolled, &connected, &disconnected, &seen, &updated, &n.Version, &n.Position)
	if err != nil {
		return n, err
	}
	if err := json.Unmarshal([]byte(labels), &n.Labels); err != nil {
		return n, err
	}
	if facts != "" {
		n.Facts = &node.Facts{}
		if err := json.Unmarshal([]byte(facts), n.Facts); err != nil {
			return n, err
		}
	}
	n.Status = node.Status(status)
	n.FactsAt, n.StatusSince, n.EnrolledAt, n.ConnectedAt = ts(factsAt), ts(since), ts(enrolled), ts(connected)
	n.DisconnectedAt, n.LastSeenAt, n.UpdatedAt = ts(disconnected), ts(seen), ts(updated)
	return n, nil
}

var nodeOrder = order{name: "nodes", cols: []string{"id"}, times: []bool{false}}

// ListNodes lists nodes by id.
func (r *Reader) ListNodes(ctx context.Context, f NodeFilter, p Page) (Connection[Node], error) {
	q := &query{}
	if len(f.Status) > 0 {
		q.add("status = ANY(" + q.arg(strs(f.Status)) + ")")
	}
	if len(f.Labels) > 0 {
		b, _ := json.Marshal(f.Labels)
		q.add("labels @> " + q.arg(string(b)) + "::jsonb")
	}
	if f.LocationID != "" {
		q.add("location_id = " + q.arg(f.LocationID))
	}
	if f.Hostname != "" {
		q.add("hostname ILIKE " + q.arg(like(f.Hostname)))
	}
	return list(ctx, r.db, nodeColumns+" FROM "+r.table("nodes"), q, nodeOrder, p, scanNode,
		func(n *Node) []any { return []any{n.ID} })
}

// Node returns one node, or a *domain.NotFoundError.
func (r *Reader) Node(ctx context.Context, id string) (Node, error) {
	return one(ctx, r.db, nodeColumns+" FROM "+r.table("nodes"), "node", id, scanNode, func(n *Node) string { return n.ID })
}

// NodesByID returns nodes in the order of ids, nil where none exists.
func (r *Reader) NodesByID(ctx context.Context, ids []string) ([]*Node, error) {
	return byIDs(ctx, r.db, nodeColumns+" FROM "+r.table("nodes"), "nodes", ids, scanNode, func(n *Node) string { return n.ID })
}

// NodeStatusPeriod is a span of time a node spent in one status; the current
// one has no end.
type NodeStatusPeriod struct {
	Status    node.Status
	StartedAt time.Time
	EndedAt   time.Time // zero for the current status
}

// NodeStatusHistory returns a node's statuses over time, oldest first, that
// overlap [from, to) (zero times: unbounded).
func (r *Reader) NodeStatusHistory(ctx context.Context, id string, from, to time.Time) ([]NodeStatusPeriod, error) {
	q := &query{}
	idArg := q.arg(id)
	cond := ""
	if !from.IsZero() {
		cond += " AND (ended_at IS NULL OR ended_at > " + q.arg(from) + ")"
	}
	if !to.IsZero() {
		cond += " AND started_at < " + q.arg(to)
	}
	rows, err := r.db.Query(ctx, `SELECT status, started_at, ended_at FROM (
		SELECT status, started_at, ended_at FROM `+r.table("node_status_periods")+` WHERE node_id = `+idArg+`
		UNION ALL
		SELECT status, status_since, NULL FROM `+r.table("nodes")+` WHERE id = `+idArg+` AND status_since IS NOT NULL
	) p WHERE true`+cond+` ORDER BY started_at`, q.args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (NodeStatusPeriod, error) {
		var p NodeStatusPeriod
		var status string
		var ended pgtype.Timestamptz
		err := row.Scan(&status, &p.StartedAt, &ended)
		p.Status, p.StartedAt, p.EndedAt = node.Status(status), p.StartedAt.UTC(), ts(ended)
		return p, err
	})
}

func ts(t pgtype.Timestamptz) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time.UTC()
}

func strs[S ~string](xs []S) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}
