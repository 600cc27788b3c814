package nodes

import (
	"context"
	"time"

	"cairn/commands"
	"cairn/domain"
	"cairn/domain/jointoken"
	"cairn/domain/node"
)

// Enroll registers a node by hand (agents enroll through a join token
// instead). NodeID is optional: the server picks one when it is empty.
type Enroll struct {
	NodeID     string            `json:"nodeId,omitempty"`
	Hostname   string            `json:"hostname"`
	LocationID string            `json:"locationId,omitempty"`
	Labels     map[string]string `json:"labels,omitempty"`
}

// SetLabels replaces a node's labels.
type SetLabels struct {
	NodeID string            `json:"nodeId"`
	Labels map[string]string `json:"labels"`
}

// SetLocation moves a node to an existing, active location ("" unassigns it).
type SetLocation struct {
	NodeID     string `json:"nodeId"`
	LocationID string `json:"locationId"`
}

// Drain stops new work for a node.
type Drain struct {
	NodeID string `json:"nodeId"`
	Reason string `json:"reason,omitempty"`
}

// Undrain lets a node take work again.
type Undrain struct {
	NodeID string `json:"nodeId"`
}

// Decommission retires a node for good and revokes its agent's credential.
type Decommission struct {
	NodeID string `json:"nodeId"`
	Reason string `json:"reason,omitempty"`
}

// Enroll creates a node in an existing location.
func (h *Handlers) Enroll(ctx context.Context, meta commands.Meta, in Enroll) (commands.Outcome, error) {
	if err := commands.RequireLocation(ctx, h.store, in.LocationID); err != nil {
		return commands.Outcome{}, err
	}
	id, err := commands.EntityID(ctx, h.store, &meta, domain.NodeStream, in.NodeID, h.newID)
	if err != nil {
		return commands.Outcome{}, err
	}
	at := h.now()
	res, err := commands.Execute[node.Node](ctx, h.store, domain.NodeStream, id, meta, in,
		func(n node.Node) ([]domain.Event, error) {
			return n.Enroll(node.Enroll{NodeID: id, Hostname: in.Hostname, LocationID: in.LocationID, Labels: in.Labels, At: at})
		})
	if err != nil {
		return commands.Outcome{}, err
	}
	return commands.Outcome{Result: res, ID: id}, nil
}

// SetLabels replaces the node's labels; the same labels change nothing.
func (h *Handlers) SetLabels(ctx context.Context, meta commands.Meta, in SetLabels) (commands.Outcome, error) {
	return h.run(ctx, meta, in.NodeID, in, func(n node.Node, at time.Time) ([]domain.Event, error) {
		return n.SetLabels(node.SetLabels{NodeID: in.NodeID, Labels: in.Labels, At: at})
	})
}

// SetLocation moves the node.
func (h *Handlers) SetLocation(ctx context.Context, meta commands.Meta, in SetLocation) (commands.Outcome, error) {
	if err := commands.RequireLocation(ctx, h.store, in.LocationID); err != nil {
		return commands.Outcome{}, err
	}
	return h.run(ctx, meta, in.NodeID, in, func(n node.Node, at time.Time) ([]domain.Event, error) {
		return n.SetLocation(node.SetLocation{NodeID: in.NodeID, LocationID: in.LocationID, At: at})
	})
}

// Drain cordons the node.
func (h *Handlers) Drain(ctx context.Context, meta commands.Meta, in Drain) (commands.Outcome, error) {
	return h.run(ctx, meta, in.NodeID, in, func(n node.Node, at time.Time) ([]domain.Event, error) {
		return n.Drain(node.Drain{NodeID: in.NodeID, Reason: in.Reason, At: at})
	})
}

// Undrain lifts the cordon.
func (h *Handlers) Undrain(ctx context.Context, meta commands.Meta, in Undrain) (commands.Outcome, error) {
	return h.run(ctx, meta, in.NodeID, in, func(n node.Node, at time.Time) ([]domain.Event, error) {
		return n.Undrain(node.Undrain{NodeID: in.NodeID, At: at})
	})
}

// Decommission retires the node and, in the same append, revokes its agent's
// credential: a retired node must not act a moment longer, whatever else
// fails.
func (h *Handlers) Decommission(ctx context.Context, meta commands.Meta, in Decommission) (commands.Outcome, error) {
	if err := commands.RequireID("nodeId", in.NodeID); err != nil {
		return commands.Outcome{}, err
	}
	at := h.now()
	res, err := commands.ExecuteMany(ctx, h.store, meta, "node.decommission", in, func(ctx context.Context) ([]commands.StreamChange, error) {
		n, version, err := commands.Load[node.Node](ctx, h.store, domain.NodeStream, in.NodeID)
		if err != nil {
			return nil, err
		}
		es, err := n.Decommission(node.Decommission{NodeID: in.NodeID, Reason: in.Reason, At: at})
		if err != nil {
			return nil, err
		}
		changes := []commands.StreamChange{{StreamType: domain.NodeStream, ID: in.NodeID, Version: version, Events: es}}
		cred, cv, err := commands.Load[jointoken.Credential](ctx, h.store, domain.NodeCredentialStream, in.NodeID)
		if err != nil {
			return nil, err
		}
		if cred.Status == jointoken.CredentialStatusActive {
			ces, err := cred.Revoke(jointoken.RevokeCredential{NodeID: in.NodeID, Reason: "node decommissioned", At: at})
			if err != nil {
				return nil, err
			}
			changes = append(changes, commands.StreamChange{StreamType: domain.NodeCredentialStream, ID: in.NodeID, Version: cv, Events: ces})
		}
		return changes, nil
	})
	if err != nil {
		return commands.Outcome{}, err
	}
	return commands.Outcome{Result: commands.ResultFor(res, domain.NodeStream, in.NodeID), ID: in.NodeID}, nil
}
