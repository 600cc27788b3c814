// Package jointoken holds the aggregates of agent enrollment: the short-lived,
// single-use join token an operator hands to a new node, and the node
// credential its agent receives in exchange. Each has its own state type and
// stream; both keep only hashes of their secrets.
package jointoken

import (
	"crypto/subtle"
	"maps"
	"slices"
	"time"

	"cairn/domain"
	"cairn/domain/node"
)

const joinEntity = "join token"

// MaxLifetime bounds how long a join token stays redeemable: it is meant to be
// pasted into a new node's setup within minutes, and a long-lived one is a
// standing invitation to enroll rogue nodes.
const MaxLifetime = 24 * time.Hour

// Status is where a join token is in its life. Expiry is not a status: it
// follows from ExpiresAt and the time of redemption.
type Status string

const (
	StatusActive   Status = "active"
	StatusRedeemed Status = "redeemed" // used once; never again
	StatusRevoked  Status = "revoked"
)

// Statuses lists every join token status.
var Statuses = []Status{StatusActive, StatusRedeemed, StatusRevoked}

// Join token commands, as the allowed-commands table and state errors spell them.
const (
	CmdIssue  = "issue"
	CmdRedeem = "redeem"
	CmdRevoke = "revoke"
)

// Commands lists every join token command.
var Commands = []string{CmdIssue, CmdRedeem, CmdRevoke}

// Allowed lists the commands an existing join token accepts in each status;
// issue is accepted only by a token that does not exist yet.
var Allowed = map[Status][]string{
	StatusActive:   {CmdRedeem, CmdRevoke},
	StatusRedeemed: {},
	StatusRevoked:  {},
}

// AllowedCommands returns the commands a join token in status s accepts.
func AllowedCommands(s Status) []string { return slices.Clone(Allowed[s]) }

// JoinToken is the state of one join token, folded from its events.
type JoinToken struct {
	ID           string
	SecretHash   string            // hex SHA-256 of the secret; the secret is never stored
	LocationID   string            // the enrolled node's location, chosen by the operator
	Labels       map[string]string // labels the enrolled node starts with
	ExpiresAt    time.Time
	Status       Status
	NodeID       string // the node it enrolled, once redeemed
	IssuedAt     time.Time
	RedeemedAt   time.Time
	RevokedAt    time.Time
	RevokeReason string
}

// Exists reports whether the token has been issued.
func (t JoinToken) Exists() bool { return t.Status != "" }

// Redeemable reports whether the token would enroll a node at time at.
func (t JoinToken) Redeemable(at time.Time) bool {
	return t.Status == StatusActive && at.Before(t.ExpiresAt)
}

// AllowedCommands returns the commands this token accepts now.
func (t JoinToken) AllowedCommands() []string {
	if !t.Exists() {
		return []string{CmdIssue}
	}
	return AllowedCommands(t.Status)
}

// Apply folds one event into the state; others are ignored.
func (t *JoinToken) Apply(e domain.Event) {
	switch e := e.(type) {
	case Issued:
		*t = JoinToken{ID: e.TokenID, SecretHash: e.SecretHash, LocationID: e.LocationID,
			Labels: maps.Clone(e.Labels), ExpiresAt: e.ExpiresAt, Status: StatusActive, IssuedAt: e.At}
	case Redeemed:
		t.Status = StatusRedeemed
		t.NodeID = e.NodeID
		t.RedeemedAt = e.At
	case Revoked:
		t.Status = StatusRevoked
		t.RevokedAt = e.At
		t.RevokeReason = e.Reason
	}
}

// Issue issues a join token. The caller generated the secret, shows it once,
// and passes only its hex hash.
type Issue struct {
	TokenID    string
	SecretHash string
	LocationID string
	Labels     map[string]string
	ExpiresAt  time.Time
	At         time.Time
}

// Redeem trades the token for the enrollment of node NodeID. SecretHash is the
// hash of the secret the agent presented.
type Redeem struct {
	TokenID    string
	SecretHash string
	NodeID     string
	At         time.Time
}

// Revoke withdraws a token that was not used.
type Revoke struct {
	TokenID string
	Reason  string
	At      time.Time
}

// Issue decides the issue of a join token that does not exist yet.
func (t JoinToken) Issue(c Issue) ([]domain.Event, error) {
	if t.Exists() {
		return nil, t.refuse(CmdIssue)
	}
	if err := domain.FirstError(
		domain.ValidateID("tokenId", c.TokenID),
		domain.ValidateSecretHash("secretHash", c.SecretHash),
		domain.ValidateOptionalID("locationId", c.LocationID),
		node.ValidateLabels("labels", c.Labels),
		domain.ValidateAt(c.At),
	); err != nil {
		return nil, err
	}
	switch {
	case !c.ExpiresAt.After(c.At):
		return nil, domain.Invalid("expiresAt", "must be after the time of issue")
	case c.ExpiresAt.Sub(c.At) > MaxLifetime:
		return nil, domain.Invalid("expiresAt", "must be within "+MaxLifetime.String()+" of the time of issue: join tokens are short-lived")
	}
	return []domain.Event{Issued{
		TokenID: c.TokenID, SecretHash: c.SecretHash, LocationID: c.LocationID,
		Labels: maps.Clone(c.Labels), ExpiresAt: c.ExpiresAt.UTC(), At: c.At.UTC(),
	}}, nil
}

// Redeem decides a redemption. A secret that does not match is reported as
// an unknown token, so that a guesser learns nothing about which ids exist; a
// used, revoked or expired token is refused with a reason the agent's
// operator can act on.
func (t JoinToken) Redeem(c Redeem) ([]domain.Event, error) {
	if !t.Exists() || subtle.ConstantTimeCompare([]byte(c.SecretHash), []byte(t.SecretHash)) != 1 {
		return nil, &domain.NotFoundError{Entity: joinEntity, ID: c.TokenID}
	}
	if c.TokenID != t.ID {
		return nil, domain.Invalid("tokenId", "is "+quote(c.TokenID)+" but the loaded join token is "+quote(t.ID))
	}
	switch t.Status {
	case StatusRedeemed:
		return nil, &UsedError{TokenID: t.ID, NodeID: t.NodeID}
	case StatusRevoked:
		return nil, t.refuse(CmdRedeem)
	}
	if err := domain.FirstError(domain.ValidateID("nodeId", c.NodeID), domain.ValidateAt(c.At)); err != nil {
		return nil, err
	}
	if !c.At.Before(t.ExpiresAt) {
		return nil, &ExpiredError{TokenID: t.ID, ExpiredAt: t.ExpiresAt}
	}
	return []domain.Event{Redeemed{TokenID: t.ID, NodeID: c.NodeID, At: c.At.UTC()}}, nil
}

// Revoke revokes an active token, expired or not.
func (t JoinToken) Revoke(c Revoke) ([]domain.Event, error) {
	if err := domain.Admit(joinEntity, t.ID, t.Status, Allowed, "tokenId", c.TokenID, CmdRevoke, c.At); err != nil {
		return nil, err
	}
	if err := domain.ValidateText("reason", c.Reason, MaxReasonLength); err != nil {
		return nil, err
	}
	return []domain.Event{Revoked{TokenID: t.ID, Reason: c.Reason, At: c.At.UTC()}}, nil
}

func (t JoinToken) refuse(command string) error {
	return &domain.StateError{Entity: joinEntity, ID: t.ID, Command: command, State: string(t.Status)}
}
