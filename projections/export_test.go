package projections

import "cairn/eventstore"

// SetAfterCommit installs a hook that runs after each committed batch, so
// tests can stop a runner between batches.
func SetAfterCommit(r *Runner, f func(name string, c eventstore.Cursor)) { r.afterCommit = f }
