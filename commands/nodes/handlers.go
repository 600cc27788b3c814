// Package nodes handles the commands that change nodes: the operator's
// (enroll, label, place, drain, decommission) and the agent's and liveness
// monitor's (connect, disconnect, down, facts, drained).
package nodes

import (
	"context"
	"time"

	"cairn/commands"
	"cairn/domain"
	"cairn/domain/node"
)

// Handlers runs node commands against the event store.
type Handlers struct {
	store commands.Store
	now   commands.Clock
	newID commands.IDGenerator
}

// NewHandlers returns node handlers; clock stamps commands and ids names
// nodes enrolled without a caller-chosen id.
func NewHandlers(store commands.Store, clock commands.Clock, ids commands.IDGenerator) *Handlers {
	return &Handlers{store: store, now: clock, newID: ids}
}

// run decides one command on an existing node, named by id.
func (h *Handlers) run(ctx context.Context, meta commands.Meta, id string, input any,
	decide func(node.Node, time.Time) ([]domain.Event, error)) (commands.Outcome, error) {
	if err := commands.RequireID("nodeId", id); err != nil {
		return commands.Outcome{}, err
	}
	at := h.now()
	res, err := commands.Execute[node.Node](ctx, h.store, domain.NodeStream, id, meta, input,
		func(n node.Node) ([]domain.Event, error) { return decide(n, at) })
	if err != nil {
		return commands.Outcome{}, err
	}
	return commands.Outcome{Result: res, ID: id}, nil
}
