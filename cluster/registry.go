package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"
)

// Replica is one cairnd process of the cluster as the others see it.
type Replica struct {
	ID      string
	Address string
	Version string
	// KeyID is a fingerprint of the replica's secrets key.
	KeyID     string
	StartedAt time.Time
	LastSeen  time.Time
	// Owns lists the work whose lease the replica holds.
	Owns []string
}

// Gone reports whether the replica stopped announcing itself: it died, or
// lost the database, more than after ago.
func (r Replica) Gone(now time.Time, after time.Duration) bool { return now.Sub(r.LastSeen) > after }

// Registry announces this replica in cluster_replicas while it runs and
// lists the others.
type Registry struct {
	db    DB
	self  Replica
	every time.Duration
	log   zerolog.Logger
}

// DefaultAnnounceEvery is how often a replica refreshes its row; one silent
// for GoneAfter (three rounds) is a replica that is gone.
const (
	DefaultAnnounceEvery = 2 * time.Second
	GoneAfter            = 3 * DefaultAnnounceEvery
)

// NewReplicaID makes an id that is unique across restarts: the host name,
// the process id and a random part, so a restarted process is a new replica.
func NewReplicaID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "cairnd"
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
}

// SessionName is the application_name of a replica's database sessions:
// "cairnd <id>", cut to PostgreSQL's 63 bytes.
func SessionName(replicaID string) string {
	name := "cairnd " + replicaID
	if len(name) > 63 {
		name = name[:63]
	}
	return name
}

// NewRegistry returns the registry of a replica with this id, address,
// version and secrets key fingerprint; Run announces it.
func NewRegistry(db DB, id, address, version, keyID string, log zerolog.Logger) *Registry {
	return &Registry{db: db, self: Replica{ID: id, Address: address, Version: version, KeyID: keyID, StartedAt: time.Now().UTC()},
		every: DefaultAnnounceEvery, log: log}
}

// KeyMismatchError refuses to start a replica whose secrets key differs from
// that of a replica running on the same database: values one sealed, the
// other could not open.
type KeyMismatchError struct{ Other Replica }

func (e *KeyMismatchError) Error() string {
	return fmt.Sprintf("this replica's secrets key differs from that of replica %s (%s), which is running on the same database: "+
		"start every replica with the same key (--secrets-key-file pointing at a copy of the first replica's secrets.key)", e.Other.ID, e.Other.Address)
}

// CheckKey refuses (*KeyMismatchError) when a live replica on the database
// uses another secrets key.
func (r *Registry) CheckKey(ctx context.Context) error {
	reps, now, err := r.Replicas(ctx)
	if err != nil {
		return err
	}
	for _, o := range reps {
		if o.ID != r.self.ID && !o.Gone(now, GoneAfter) && o.KeyID != r.self.KeyID {
			return &KeyMismatchError{Other: o}
		}
	}
	return nil
}

// Self is this replica.
func (r *Registry) Self() Replica { return r.self }

// Run announces the replica until ctx ends, then removes its row. Replicas
// gone for an hour are forgotten.
func (r *Registry) Run(ctx context.Context) error {
	t := time.NewTicker(r.every)
	defer t.Stop()
	for {
		if err := r.announce(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn().Err(err).Msg("could not announce this replica; trying again")
		}
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if _, err := r.db.Exec(dctx, `DELETE FROM cluster_replicas WHERE id = $1`, r.self.ID); err != nil {
				r.log.Warn().Err(err).Msg("could not remove this replica from the cluster's list; it shows as gone")
			}
			return nil
		case <-t.C:
		}
	}
}

func (r *Registry) announce(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.every)
	defer cancel()
	_, err := r.db.Exec(ctx, `
		INSERT INTO cluster_replicas (id, address, version, secrets_key_id, started_at, last_seen) VALUES ($1, $2, $3, $4, $5, now())
		ON CONFLICT (id) DO UPDATE SET address = EXCLUDED.address, version = EXCLUDED.version, last_seen = now()`,
		r.self.ID, r.self.Address, r.self.Version, r.self.KeyID, r.self.StartedAt)
	if err != nil {
		return fmt.Errorf("announce replica: %w", err)
	}
	if _, err := r.db.Exec(ctx, `DELETE FROM cluster_replicas WHERE last_seen < now() - interval '1 hour'`); err != nil {
		return fmt.Errorf("forget old replicas: %w", err)
	}
	return nil
}

// Replicas lists the replicas the database knows, with the leases each
// holds unexpired, by start time; LastSeen and StartedAt are by the
// database's clock, as is now, which it returns too.
func (r *Registry) Replicas(ctx context.Context) ([]Replica, time.Time, error) {
	rows, err := r.db.Query(ctx, `
		SELECT r.id, r.address, r.version, r.secrets_key_id, r.started_at, r.last_seen,
		       coalesce(array_agg(l.name ORDER BY l.name) FILTER (WHERE l.name IS NOT NULL), '{}'), now()
		FROM cluster_replicas r
		LEFT JOIN cluster_leases l ON l.owner = r.id AND l.expires_at > now()
		GROUP BY r.id ORDER BY r.started_at, r.id`)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("list replicas: %w", err)
	}
	var now time.Time
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Replica, error) {
		var rep Replica
		err := row.Scan(&rep.ID, &rep.Address, &rep.Version, &rep.KeyID, &rep.StartedAt, &rep.LastSeen, &rep.Owns, &now)
		return rep, err
	})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("list replicas: %w", err)
	}
	if now.IsZero() {
		now = time.Now()
	}
	return out, now, nil
}
