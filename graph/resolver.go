package graph

// Resolver is the root of the resolvers gqlgen calls, one file per area of
// the schema (node.resolvers.go, ...). It reaches everything through the
// Server it belongs to.
type Resolver struct {
	*Server
}

func newResolver(s *Server) *Resolver { return &Resolver{Server: s} }
