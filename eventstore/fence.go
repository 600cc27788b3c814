package eventstore

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Fence is a condition an append must meet inside its own transaction. The
// owner of once-only work (cluster.Lease) fences its appends with the epoch
// it holds, so an owner that was deposed while it paused or lost the
// database appends nothing: the check and the insert commit together, and
// a new owner's takeover waits for the lock the check holds.
type Fence interface {
	// Key identifies the fence: appends with equal keys in one batch share
	// one check.
	Key() string
	// Check runs in the append's transaction. It returns an error (a
	// *FencedError, typically) when the fence does not hold, and must lock
	// what it read until the transaction ends.
	Check(ctx context.Context, tx pgx.Tx) error
}

// FencedError refuses an append whose fence no longer holds: its writer lost
// the ownership it acted under.
type FencedError struct {
	Fence  string
	Reason string
}

func (e *FencedError) Error() string {
	return "append refused by fence " + e.Fence + ": " + e.Reason
}

type fenceKey struct{}

// WithFence returns a context whose appends carry f, unless their request
// names a fence of its own. It is how an owner's decisions are fenced
// without every command handler on the way knowing about ownership.
func WithFence(ctx context.Context, f Fence) context.Context {
	return context.WithValue(ctx, fenceKey{}, f)
}

func fenceOf(ctx context.Context) Fence {
	f, _ := ctx.Value(fenceKey{}).(Fence)
	return f
}
