package jointoken

import (
	"time"

	"cairn/domain"
)

// Issued records a join token; only the hash of its secret is kept.
type Issued struct {
	TokenID    string            `json:"tokenId"`
	SecretHash string            `json:"secretHash"`
	LocationID string            `json:"locationId,omitempty"`
	Labels     map[string]string `json:"labels,omitempty"`
	ExpiresAt  time.Time         `json:"expiresAt"`
	At         time.Time         `json:"at"`
}

// Redeemed records that an agent traded the token for the enrollment of a node.
type Redeemed struct {
	TokenID string    `json:"tokenId"`
	NodeID  string    `json:"nodeId"`
	At      time.Time `json:"at"`
}

// Revoked records that an unused token was withdrawn.
type Revoked struct {
	TokenID string    `json:"tokenId"`
	Reason  string    `json:"reason,omitempty"`
	At      time.Time `json:"at"`
}

// CredentialIssued records a node's credential; only the hash of its secret
// is kept. A zero ExpiresAt means it lasts until revoked.
type CredentialIssued struct {
	NodeID     string    `json:"nodeId"`
	SecretHash string    `json:"secretHash"`
	ExpiresAt  time.Time `json:"expiresAt"`
	At         time.Time `json:"at"`
}

// CredentialRevoked records that a node's credential no longer authenticates.
type CredentialRevoked struct {
	NodeID string    `json:"nodeId"`
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
}

func (Issued) EventType() string            { return "join_token.issued" }
func (Redeemed) EventType() string          { return "join_token.redeemed" }
func (Revoked) EventType() string           { return "join_token.revoked" }
func (CredentialIssued) EventType() string  { return "node_credential.issued" }
func (CredentialRevoked) EventType() string { return "node_credential.revoked" }

// RegisterEvents registers the join token and node credential events at their
// current schema versions.
func RegisterEvents(r *domain.Registry) {
	domain.Register[Issued](r, 1)
	domain.Register[Redeemed](r, 1)
	domain.Register[Revoked](r, 1)
	domain.Register[CredentialIssued](r, 1)
	domain.Register[CredentialRevoked](r, 1)
}
