package nodes

import (
	"context"
	"time"

	"cairn/commands"
	"cairn/domain"
	"cairn/domain/node"
)

// Connect is the agent's hello and heartbeat.
type Connect struct {
	NodeID string `json:"nodeId"`
}

// Disconnect reports an agent silent past the grace period.
type Disconnect struct {
	NodeID string `json:"nodeId"`
}

// MarkDown reports a disconnected node away past the down window.
type MarkDown struct {
	NodeID string `json:"nodeId"`
}

// ReportFacts records what the agent found about its node.
type ReportFacts struct {
	NodeID string     `json:"nodeId"`
	Facts  node.Facts `json:"facts"`
}

// MarkDrained reports that a draining node runs no job any more.
type MarkDrained struct {
	NodeID string `json:"nodeId"`
}

// Connect brings the node online; on a connected node it is a heartbeat and
// records nothing.
func (h *Handlers) Connect(ctx context.Context, meta commands.Meta, in Connect) (commands.Outcome, error) {
	return h.run(ctx, meta, in.NodeID, in, func(n node.Node, at time.Time) ([]domain.Event, error) {
		return n.Connect(node.Connect{NodeID: in.NodeID, At: at})
	})
}

// Disconnect marks a connected node disconnected.
func (h *Handlers) Disconnect(ctx context.Context, meta commands.Meta, in Disconnect) (commands.Outcome, error) {
	return h.run(ctx, meta, in.NodeID, in, func(n node.Node, at time.Time) ([]domain.Event, error) {
		return n.Disconnect(node.Disconnect{NodeID: in.NodeID, At: at})
	})
}

// MarkDown marks a disconnected node down.
func (h *Handlers) MarkDown(ctx context.Context, meta commands.Meta, in MarkDown) (commands.Outcome, error) {
	return h.run(ctx, meta, in.NodeID, in, func(n node.Node, at time.Time) ([]domain.Event, error) {
		return n.MarkDown(node.MarkDown{NodeID: in.NodeID, At: at})
	})
}

// ReportFacts records changed facts; unchanged ones record nothing.
func (h *Handlers) ReportFacts(ctx context.Context, meta commands.Meta, in ReportFacts) (commands.Outcome, error) {
	return h.run(ctx, meta, in.NodeID, in, func(n node.Node, at time.Time) ([]domain.Event, error) {
		return n.ReportFacts(node.ReportFacts{NodeID: in.NodeID, Facts: in.Facts, At: at})
	})
}

// MarkDrained moves a draining node to drained.
func (h *Handlers) MarkDrained(ctx context.Context, meta commands.Meta, in MarkDrained) (commands.Outcome, error) {
	return h.run(ctx, meta, in.NodeID, in, func(n node.Node, at time.Time) ([]domain.Event, error) {
		return n.MarkDrained(node.MarkDrained{NodeID: in.NodeID, At: at})
	})
}
