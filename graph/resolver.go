package graph

import (
	"github.com/rs/zerolog"

	"cairn/graph/live"
	"cairn/projections/readmodel"
)

// Resolver is the root of the resolvers gqlgen calls, one file per area of
// the schema (node.resolvers.go, ...), and of the helpers they share.
type Resolver struct {
	cfg    Config
	deps   Deps
	log    zerolog.Logger
	reader *readmodel.Reader

	// events is fed by the one store subscription of the process; projected
	// follows it, each batch published once the read models applied it.
	events    *live.Hub
	projected *live.Hub
}
