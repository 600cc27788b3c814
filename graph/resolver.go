package graph

import (
	"context"
	"sync/atomic"

	"github.com/rs/zerolog"

	"cairn/graph/live"
	"cairn/graph/transport"
	"cairn/internal/workpool"
	"cairn/projections/readmodel"
)

// Resolver is the root of the resolvers gqlgen calls, one file per area of
// the schema (node.resolvers.go, ...), and of the helpers they share.
type Resolver struct {
	cfg    Config
	deps   Deps
	log    zerolog.Logger
	reader *readmodel.Reader
	// standby reads the read models on a streaming standby, when one is
	// configured; standbyUp says whether it answered its last check.
	standby   *readmodel.Reader
	standbyUp atomic.Bool

	// events is fed by the one store subscription of the process; projected
	// follows it, each batch published once the read models applied it.
	events    *live.Hub
	projected *live.Hub
	// workers deliver subscriptions' events, keeping their grown stacks
	// between deliveries.
	workers *workpool.Pool
}

// readModels is the reader a resolver reads the read models with: the
// standby's for queries that do not wait for a write while it answers, the
// primary's otherwise, so a caller passing a mutation's cursor always sees
// its write.
func (r *Resolver) readModels(ctx context.Context) *readmodel.Reader {
	if r.standby != nil && r.standbyUp.Load() && !transport.ReadsOwnWrites(ctx) {
		return r.standby
	}
	return r.reader
}
