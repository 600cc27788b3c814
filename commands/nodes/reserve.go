package nodes

import (
	"context"

	"cairn/commands"
	"cairn/domain"
	"cairn/domain/placement"
)

// SetReserve sets what of a node the scheduler leaves to the system, or
// with Inherit goes back to its location's reserve.
type SetReserve struct {
	NodeID  string              `json:"nodeId"`
	Reserve placement.Resources `json:"reserve"`
	Inherit bool                `json:"inherit,omitempty"`
}

// SetReserve sets a node's reserve; the same reserve changes nothing.
func (h *Handlers) SetReserve(ctx context.Context, meta commands.Meta, in SetReserve) (commands.Outcome, error) {
	if err := commands.RequireID("nodeId", in.NodeID); err != nil {
		return commands.Outcome{}, err
	}
	at := h.now()
	res, err := commands.Execute[placement.NodeLoad](ctx, h.store, domain.NodeStream, in.NodeID, meta, in,
		func(l placement.NodeLoad) ([]domain.Event, error) {
			return l.SetReserve(in.NodeID, in.Reserve, in.Inherit, at)
		})
	if err != nil {
		return commands.Outcome{}, err
	}
	return commands.Outcome{Result: res, ID: in.NodeID}, nil
}
