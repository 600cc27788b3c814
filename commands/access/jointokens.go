package access

import (
	"context"
	"fmt"
	"maps"
	"time"

	"cairn/commands"
	"cairn/domain"
	"cairn/domain/jointoken"
	"cairn/domain/node"
	"cairn/internal/bearer"
)

// IssueJoinToken issues a short-lived, single-use token an agent enrolls its
// node with.
type IssueJoinToken struct {
	// LocationID places the node the token enrolls; optional.
	LocationID string `json:"locationId,omitempty"`
	// Labels are given to the node the token enrolls; they win over the
	// labels the agent asks for.
	Labels map[string]string `json:"labels,omitempty"`
	// TTL is the token's lifetime; zero takes the configured default.
	TTL time.Duration `json:"ttl,omitempty"`
}

// RevokeJoinToken withdraws an unused join token.
type RevokeJoinToken struct {
	TokenID string `json:"tokenId"`
	Reason  string `json:"reason,omitempty"`
}

// RedeemJoinToken is an agent's request to enroll its node.
type RedeemJoinToken struct {
	Token    string            `json:"token"`
	Hostname string            `json:"hostname"`
	Labels   map[string]string `json:"labels,omitempty"`
}

// IssuedJoinToken is a new join token. Outcome.ID is the token's id.
type IssuedJoinToken struct {
	commands.Outcome
	// Token is "cairnjoin_<id>_<secret>", shown once; empty on a retry.
	Token     string
	ExpiresAt time.Time
}

// Enrollment is the outcome of a redeemed join token. Outcome.ID is the new
// node's id and Outcome.Version that of its stream.
type Enrollment struct {
	commands.Outcome
	// Credential is the node's API token, "cairn_node.<node id>_<secret>",
	// for the agent to keep. It is shown once: a retried command (Duplicate)
	// returns it empty, and the agent needs a new join token.
	Credential string
}

// IssueJoinToken issues a join token for a node in an existing location.
func (h *Handlers) IssueJoinToken(ctx context.Context, meta commands.Meta, in IssueJoinToken) (IssuedJoinToken, error) {
	ttl := in.TTL
	switch {
	case ttl == 0:
		ttl = h.opts.JoinTokenTTL
	case ttl < 0:
		return IssuedJoinToken{}, &domain.ValidationError{Field: "ttl", Reason: "must be positive, or zero for the default"}
	}
	if err := commands.RequireLocation(ctx, h.store, in.LocationID); err != nil {
		return IssuedJoinToken{}, err
	}
	id, err := commands.EntityID(ctx, h.store, &meta, domain.JoinTokenStream, "", h.newID)
	if err != nil {
		return IssuedJoinToken{}, err
	}
	minted, err := bearer.Mint(bearer.JoinToken, id)
	if err != nil {
		return IssuedJoinToken{}, err
	}
	var expires time.Time
	out, err := execute(ctx, h, domain.JoinTokenStream, "tokenId", id, meta, in, func(t jointoken.JoinToken, at time.Time) ([]domain.Event, error) {
		expires = at.Add(ttl).UTC()
		return t.Issue(jointoken.Issue{TokenID: id, SecretHash: minted.Hash, LocationID: in.LocationID,
			Labels: in.Labels, ExpiresAt: expires, At: at})
	})
	if err != nil {
		return IssuedJoinToken{}, err
	}
	if out.Duplicate {
		t, _, err := commands.Load[jointoken.JoinToken](ctx, h.store, domain.JoinTokenStream, id)
		return IssuedJoinToken{Outcome: out, ExpiresAt: t.ExpiresAt}, err
	}
	return IssuedJoinToken{Outcome: out, Token: minted.Clear, ExpiresAt: expires}, nil
}

// RevokeJoinToken revokes an unused join token.
func (h *Handlers) RevokeJoinToken(ctx context.Context, meta commands.Meta, in RevokeJoinToken) (commands.Outcome, error) {
	return execute(ctx, h, domain.JoinTokenStream, "tokenId", in.TokenID, meta, in, func(t jointoken.JoinToken, at time.Time) ([]domain.Event, error) {
		return t.Revoke(jointoken.Revoke{TokenID: in.TokenID, Reason: in.Reason, At: at})
	})
}

// RedeemJoinToken marks the join token used, enrolls a new node and issues
// the node's credential, in one append: either the agent gets a node and a
// credential and the token is spent, or nothing happened. Of two agents
// redeeming one token at once, exactly one enrolls; the other is refused
// with *jointoken.UsedError. An expired token is refused with
// *jointoken.ExpiredError, an unknown one or a wrong secret with
// *domain.NotFoundError.
func (h *Handlers) RedeemJoinToken(ctx context.Context, meta commands.Meta, in RedeemJoinToken) (Enrollment, error) {
	tokenID, secret, err := bearer.Parse(bearer.JoinToken, in.Token)
	if err != nil {
		return Enrollment{}, &domain.ValidationError{Field: "token", Reason: "is not a join token: it " + err.Error()}
	}
	if meta.Actor == "" {
		meta.Actor = "join_token:" + tokenID
	}
	nodeID, err := commands.EntityID(ctx, h.store, &meta, domain.NodeStream, "", h.newID)
	if err != nil {
		return Enrollment{}, err
	}
	credential, err := bearer.Mint(bearer.APIToken, bearer.NodeCredentialPrefix+nodeID)
	if err != nil {
		return Enrollment{}, err
	}
	// The fingerprint must not hold the clear secret: the log keeps it.
	fingerprint := struct {
		TokenID, SecretHash, Hostname string
		Labels                        map[string]string
	}{tokenID, bearer.Hash(secret), in.Hostname, in.Labels}
	at := h.now()
	res, err := commands.ExecuteMany(ctx, h.store, meta, "join_token.redeem", fingerprint, func(ctx context.Context) ([]commands.StreamChange, error) {
		jt, jv, err := commands.Load[jointoken.JoinToken](ctx, h.store, domain.JoinTokenStream, tokenID)
		if err != nil {
			return nil, err
		}
		redeemed, err := jt.Redeem(jointoken.Redeem{TokenID: tokenID, SecretHash: bearer.Hash(secret), NodeID: nodeID, At: at})
		if err != nil {
			return nil, err
		}
		n, nv, err := commands.Load[node.Node](ctx, h.store, domain.NodeStream, nodeID)
		if err != nil {
			return nil, err
		}
		labels := maps.Clone(in.Labels)
		if labels == nil {
			labels = map[string]string{}
		}
		maps.Copy(labels, jt.Labels)
		enrolled, err := n.Enroll(node.Enroll{NodeID: nodeID, Hostname: in.Hostname, LocationID: jt.LocationID, Labels: labels, At: at})
		if err != nil {
			return nil, err
		}
		c, cv, err := commands.Load[jointoken.Credential](ctx, h.store, domain.NodeCredentialStream, nodeID)
		if err != nil {
			return nil, err
		}
		var expires time.Time
		if h.opts.CredentialTTL > 0 {
			expires = at.Add(h.opts.CredentialTTL)
		}
		issued, err := c.Issue(jointoken.IssueCredential{NodeID: nodeID, SecretHash: credential.Hash, ExpiresAt: expires, At: at})
		if err != nil {
			return nil, err
		}
		return []commands.StreamChange{
			{StreamType: domain.JoinTokenStream, ID: tokenID, Version: jv, Events: redeemed},
			{StreamType: domain.NodeStream, ID: nodeID, Version: nv, Events: enrolled},
			{StreamType: domain.NodeCredentialStream, ID: nodeID, Version: cv, Events: issued},
		}, nil
	})
	if err != nil {
		return Enrollment{}, err
	}
	if res.Duplicate {
		id, ok := commands.IDIn(res, domain.NodeStream)
		if !ok {
			return Enrollment{}, fmt.Errorf("command %q redeemed join token %q but enrolled no node", meta.CommandID, tokenID)
		}
		return Enrollment{Outcome: commands.Outcome{Result: commands.ResultFor(res, domain.NodeStream, id), ID: id}}, nil
	}
	return Enrollment{
		Outcome:    commands.Outcome{Result: commands.ResultFor(res, domain.NodeStream, nodeID), ID: nodeID},
		Credential: credential.Clear,
	}, nil
}
