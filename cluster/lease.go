package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"

	"cairn/eventstore"
)

// Lease defaults: an owner renews every RenewEvery and is replaced once
// TTL passed without a renewal, so a dead owner's work moves within about
// TTL + RenewEvery.
const (
	DefaultTTL        = 6 * time.Second
	DefaultRenewEvery = 2 * time.Second
)

// LeaseOptions tune a Lease; zero values take the defaults.
type LeaseOptions struct {
	TTL        time.Duration
	RenewEvery time.Duration
	Log        zerolog.Logger
}

// Lease is this replica's claim on one piece of once-only work ("dispatch"):
// Run keeps trying to take it and, once held, renews it. Owns says whether
// the replica may act now; Fence fences the appends it makes as owner.
type Lease struct {
	db      DB
	name    string
	replica string
	opts    LeaseOptions

	mu         sync.Mutex
	epoch      int64
	validUntil time.Time // by this process's monotonic clock
	handovers  int64
}

// NewLease returns the lease name as replica sees it; Run takes part.
func NewLease(db DB, name, replica string, opts LeaseOptions) *Lease {
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.RenewEvery <= 0 || opts.RenewEvery >= opts.TTL {
		opts.RenewEvery = min(DefaultRenewEvery, opts.TTL/3)
	}
	return &Lease{db: db, name: name, replica: replica, opts: opts}
}

// Name is the work the lease is for.
func (l *Lease) Name() string { return l.name }

// Owns reports whether this replica holds the lease now. It turns false by
// itself when a renewal is overdue (the process paused, or the database is
// away), before anyone else may take the lease.
func (l *Lease) Owns() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epoch > 0 && time.Now().Before(l.validUntil)
}

// Epoch is the epoch this replica holds, 0 when it holds none.
func (l *Lease) Epoch() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.epoch > 0 && time.Now().Before(l.validUntil) {
		return l.epoch
	}
	return 0
}

// Handovers counts the times this replica gained the lease.
func (l *Lease) Handovers() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.handovers
}

// Fence is the fence of the epoch held now (nil when none is held): an
// append carrying it commits only while this replica still holds that
// epoch.
func (l *Lease) Fence() eventstore.Fence {
	e := l.Epoch()
	if e == 0 {
		return nil
	}
	return fence{name: l.name, owner: l.replica, epoch: e}
}

// Run takes part in the lease until ctx ends, then gives it up if held, so
// another replica takes over at once on a clean stop.
func (l *Lease) Run(ctx context.Context) error {
	t := time.NewTicker(l.opts.RenewEvery)
	defer t.Stop()
	for {
		if err := l.tryOnce(ctx); err != nil && ctx.Err() == nil {
			l.opts.Log.Warn().Err(err).Str("lease", l.name).Msg("could not take or renew the lease; trying again")
		}
		select {
		case <-ctx.Done():
			l.release()
			return nil
		case <-t.C:
		}
	}
}

// tryOnce takes the lease if it is free or expired, or renews it if held.
func (l *Lease) tryOnce(ctx context.Context) error {
	// The validity counts from before the request: the database's expiry
	// is at least as late.
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, l.opts.RenewEvery)
	defer cancel()
	epoch, err := l.renew(ctx)
	if err == nil && epoch == 0 {
		epoch, err = l.take(ctx)
	}
	if err != nil {
		return fmt.Errorf("lease %s: %w", l.name, err)
	}
	if epoch == 0 {
		l.set(0, time.Time{}) // another replica holds it
		return nil
	}
	l.set(epoch, start.Add(l.opts.TTL))
	return nil
}

// renew extends the lease if this replica holds it (expired or not: its
// epoch stays, so what it appended under it still counts), and returns the
// epoch, or 0 when another replica holds it or nobody ever did.
//
// A renewal changes no key column, so its row lock does not conflict with
// the FOR KEY SHARE of the owner's fenced appends: it need not wait for
// them. With FOR SHARE it had to, and PostgreSQL lets a new share locker in
// ahead of a waiting writer, so under a steady stream of the owner's
// appends (a fan-out's leases) a renewal waited for a moment when none was
// in flight, and a busy owner could lose its lease for being busy.
func (l *Lease) renew(ctx context.Context) (int64, error) {
	var epoch int64
	err := l.db.QueryRow(ctx, `
		UPDATE cluster_leases SET expires_at = now() + $3 * interval '1 millisecond'
		WHERE name = $1 AND owner = $2
		RETURNING epoch`, l.name, l.replica, l.opts.TTL.Milliseconds()).Scan(&epoch)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return epoch, err
}

// take claims the lease under a new epoch if nobody holds it or its owner
// let it expire, and returns the epoch, or 0 when another replica holds it.
// It locks the row FOR UPDATE first, which waits for every append still in
// flight under the old epoch (each holds the row FOR KEY SHARE until it
// commits), so the new owner decides on a log that holds them.
func (l *Lease) take(ctx context.Context) (epoch int64, err error) {
	// A lease held and live is left alone without locking its row: a
	// standby replica asks every RenewEvery, and its lock would hold the
	// owner's appends up.
	var held bool
	err = l.db.QueryRow(ctx, `SELECT expires_at >= now() FROM cluster_leases WHERE name = $1`, l.name).Scan(&held)
	if err == nil && held {
		return 0, nil
	}
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return 0, err
	}
	tx, err := l.db.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx)) // the error returned says what failed
		}
	}()
	var owner string
	var expired bool
	err = tx.QueryRow(ctx, `SELECT owner, expires_at < now() FROM cluster_leases WHERE name = $1 FOR UPDATE`, l.name).
		Scan(&owner, &expired)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		// Never held: the first claim. Another replica's first claim at
		// the same moment wins the insert; this one then holds nothing.
		err = tx.QueryRow(ctx, `
			INSERT INTO cluster_leases (name, owner, epoch, acquired_at, expires_at)
			VALUES ($1, $2, 1, now(), now() + $3 * interval '1 millisecond')
			ON CONFLICT (name) DO NOTHING
			RETURNING epoch`, l.name, l.replica, l.opts.TTL.Milliseconds()).Scan(&epoch)
		if errors.Is(err, pgx.ErrNoRows) {
			epoch, err = 0, nil
		}
	case err != nil:
	case owner != l.replica && !expired:
		epoch = 0
	default:
		err = tx.QueryRow(ctx, `
			UPDATE cluster_leases SET
				owner       = $2,
				epoch       = CASE WHEN owner = $2 THEN epoch ELSE epoch + 1 END,
				acquired_at = CASE WHEN owner = $2 THEN acquired_at ELSE now() END,
				expires_at  = now() + $3 * interval '1 millisecond'
			WHERE name = $1
			RETURNING epoch`, l.name, l.replica, l.opts.TTL.Milliseconds()).Scan(&epoch)
	}
	if err != nil {
		return 0, err
	}
	return epoch, tx.Commit(ctx)
}

func (l *Lease) set(epoch int64, validUntil time.Time) {
	l.mu.Lock()
	was := l.epoch > 0 && time.Now().Before(l.validUntil)
	gained := epoch > 0 && epoch != l.epoch
	l.epoch, l.validUntil = epoch, validUntil
	if gained {
		l.handovers++
	}
	now := epoch > 0
	l.mu.Unlock()
	if gained {
		l.opts.Log.Info().Str("lease", l.name).Int64("epoch", epoch).Msg("this replica now owns the work")
	} else if was && !now {
		l.opts.Log.Warn().Str("lease", l.name).Msg("this replica no longer owns the work")
	}
}

// release gives the lease up so that another replica need not wait out
// its expiry.
func (l *Lease) release() {
	l.mu.Lock()
	epoch := l.epoch
	l.epoch = 0
	l.mu.Unlock()
	if epoch == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := l.db.Exec(ctx, `UPDATE cluster_leases SET expires_at = now() WHERE name = $1 AND owner = $2 AND epoch = $3`,
		l.name, l.replica, epoch); err != nil {
		l.opts.Log.Warn().Err(err).Str("lease", l.name).Msg("could not give the lease up; it expires by itself")
	}
}

// fence holds an append to the epoch its owner held when it decided.
type fence struct {
	name, owner string
	epoch       int64
}

func (f fence) Key() string { return f.name + "/" + f.owner + "/" + strconv.FormatInt(f.epoch, 10) }

// Check locks the lease row until the append's transaction ends, so a
// takeover (which locks the row FOR UPDATE) waits for the append to commit
// and the new owner sees it. FOR KEY SHARE, not FOR SHARE: the owner's own
// renewals change no key and need not wait for its appends (see renew).
func (f fence) Check(ctx context.Context, tx pgx.Tx) error {
	var owner string
	var epoch int64
	err := tx.QueryRow(ctx, `SELECT owner, epoch FROM cluster_leases WHERE name = $1 FOR KEY SHARE`, f.name).Scan(&owner, &epoch)
	if errors.Is(err, pgx.ErrNoRows) {
		return &eventstore.FencedError{Fence: f.name, Reason: "nobody holds the lease"}
	}
	if err != nil {
		return fmt.Errorf("check lease %s: %w", f.name, err)
	}
	if owner != f.owner || epoch != f.epoch {
		return &eventstore.FencedError{Fence: f.name,
			Reason: fmt.Sprintf("replica %s acted under epoch %d, but %s holds epoch %d now", f.owner, f.epoch, owner, epoch)}
	}
	return nil
}

// WhileOwned runs work for as long as this replica owns the lease, again
// each time it gains it, until ctx ends. work's context ends when the lease
// is lost and carries the lease's fence, so whatever it appends commits
// only while the replica still owns the work. Work that fails (the
// database went away, say) is started again after a backoff while the
// lease is held: it must resume from what it recorded.
func (l *Lease) WhileOwned(ctx context.Context, work func(context.Context) error) error {
	poll := min(l.opts.RenewEvery/4, 250*time.Millisecond)
	t := time.NewTicker(poll)
	defer t.Stop()
	backoff := time.Second
	for {
		if f := l.Fence(); f != nil {
			started := time.Now()
			if err := l.tenure(ctx, f, poll, work); err != nil {
				if time.Since(started) > time.Minute {
					backoff = time.Second
				}
				l.opts.Log.Warn().Err(err).Str("lease", l.name).Dur("retry_in", backoff).Msg("the owned work stopped; starting it again")
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(backoff):
				}
				backoff = min(2*backoff, 30*time.Second)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// tenure runs work under fence f until it returns or the lease is lost.
func (l *Lease) tenure(ctx context.Context, f eventstore.Fence, poll time.Duration, work func(context.Context) error) error {
	wctx, cancel := context.WithCancel(eventstore.WithFence(ctx, f))
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- work(wctx) }()
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		select {
		case err := <-done:
			if ctx.Err() != nil || wctx.Err() != nil {
				return nil
			}
			return err
		case <-t.C:
			if g := l.Fence(); g == nil || g.Key() != f.Key() {
				l.opts.Log.Warn().Str("lease", l.name).Msg("lost the lease: stopping the work it covers")
				cancel()
			}
		}
	}
}
