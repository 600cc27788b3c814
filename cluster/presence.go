package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Presence records which agents are connected to which replica, so that the
// owner of liveness knows the connections other replicas hold: a node
// connected to replica B is never marked disconnected by the owner on A.
type Presence struct {
	db      DB
	replica string
}

// NewPresence returns the presence table as replica writes it.
func NewPresence(db DB, replica string) *Presence { return &Presence{db: db, replica: replica} }

// Publish records that the nodes' agents are connected to this replica now.
func (p *Presence) Publish(ctx context.Context, nodeIDs []string) error {
	if len(nodeIDs) == 0 {
		return nil
	}
	_, err := p.db.Exec(ctx, `
		INSERT INTO agent_presence (node_id, replica_id, seen_at)
		SELECT id, $2, now() FROM unnest($1::text[]) AS id
		ON CONFLICT (node_id) DO UPDATE SET replica_id = EXCLUDED.replica_id, seen_at = EXCLUDED.seen_at`,
		nodeIDs, p.replica)
	if err != nil {
		return fmt.Errorf("publish agent presence: %w", err)
	}
	return nil
}

// Elsewhere returns the nodes whose agents another replica saw within the
// last within, and how long ago, by the database's clock.
func (p *Presence) Elsewhere(ctx context.Context, within time.Duration) (map[string]time.Duration, error) {
	rows, err := p.db.Query(ctx, `
		SELECT node_id, extract(epoch FROM now() - seen_at)
		FROM agent_presence WHERE replica_id <> $1 AND seen_at > now() - $2 * interval '1 millisecond'`,
		p.replica, within.Milliseconds())
	if err != nil {
		return nil, fmt.Errorf("read agent presence: %w", err)
	}
	out := map[string]time.Duration{}
	var node string
	var ago float64
	_, err = pgx.ForEachRow(rows, []any{&node, &ago}, func() error {
		out[node] = time.Duration(ago * float64(time.Second))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read agent presence: %w", err)
	}
	return out, nil
}
