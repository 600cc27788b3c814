package jointoken

import (
	"slices"
	"time"

	"cairn/domain"
)

const credentialEntity = "node credential"

// CredentialStatus is where a node credential is in its life.
type CredentialStatus string

const (
	CredentialStatusActive  CredentialStatus = "active"
	CredentialStatusRevoked CredentialStatus = "revoked"
)

// CredentialStatuses lists every credential status.
var CredentialStatuses = []CredentialStatus{CredentialStatusActive, CredentialStatusRevoked}

// Credential commands, as the allowed-commands table and state errors spell them.
const (
	CmdIssueCredential  = "issue"
	CmdRevokeCredential = "revoke"
)

// CredentialCommands lists every credential command.
var CredentialCommands = []string{CmdIssueCredential, CmdRevokeCredential}

// CredentialAllowed lists the commands an existing credential accepts in each
// status; issue is accepted only by a credential that does not exist yet.
var CredentialAllowed = map[CredentialStatus][]string{
	CredentialStatusActive:  {CmdRevokeCredential},
	CredentialStatusRevoked: {},
}

// CredentialAllowedCommands returns the commands a credential in status s accepts.
func CredentialAllowedCommands(s CredentialStatus) []string {
	return slices.Clone(CredentialAllowed[s])
}

// Credential is the state of a node's credential: the bearer secret its agent
// keeps on disk and acts with, for that node only. A node has one credential,
// in a stream named after the node.
type Credential struct {
	NodeID       string
	SecretHash   string    // hex SHA-256 of the secret
	ExpiresAt    time.Time // zero: it does not expire (it is revoked instead)
	Status       CredentialStatus
	IssuedAt     time.Time
	RevokedAt    time.Time
	RevokeReason string
}

// Exists reports whether the credential has been issued.
func (c Credential) Exists() bool { return c.Status != "" }

// Usable reports whether the credential authenticates at time at.
func (c Credential) Usable(at time.Time) bool {
	return c.Status == CredentialStatusActive && (c.ExpiresAt.IsZero() || at.Before(c.ExpiresAt))
}

// AllowedCommands returns the commands this credential accepts now.
func (c Credential) AllowedCommands() []string {
	if !c.Exists() {
		return []string{CmdIssueCredential}
	}
	return CredentialAllowedCommands(c.Status)
}

// Apply folds one event into the state; others are ignored.
func (c *Credential) Apply(e domain.Event) {
	switch e := e.(type) {
	case CredentialIssued:
		*c = Credential{NodeID: e.NodeID, SecretHash: e.SecretHash, ExpiresAt: e.ExpiresAt,
			Status: CredentialStatusActive, IssuedAt: e.At}
	case CredentialRevoked:
		c.Status = CredentialStatusRevoked
		c.RevokedAt = e.At
		c.RevokeReason = e.Reason
	}
}

// IssueCredential issues the credential of node NodeID. The caller generated
// the secret, hands it to the agent once, and passes only its hex hash.
// ExpiresAt may be zero for a credential that lasts until it is revoked.
type IssueCredential struct {
	NodeID     string
	SecretHash string
	ExpiresAt  time.Time
	At         time.Time
}

// RevokeCredential stops a node's credential from authenticating, e.g. when
// the node is decommissioned or its disk was lost.
type RevokeCredential struct {
	NodeID string
	Reason string
	At     time.Time
}

// Issue decides the issue of a credential that does not exist yet.
func (c Credential) Issue(cmd IssueCredential) ([]domain.Event, error) {
	if c.Exists() {
		return nil, c.refuse(CmdIssueCredential)
	}
	if err := domain.FirstError(
		domain.ValidateID("nodeId", cmd.NodeID),
		domain.ValidateSecretHash("secretHash", cmd.SecretHash),
		domain.ValidateAt(cmd.At),
	); err != nil {
		return nil, err
	}
	if !cmd.ExpiresAt.IsZero() && !cmd.ExpiresAt.After(cmd.At) {
		return nil, domain.Invalid("expiresAt", "must be after the time of issue, or zero for no expiry")
	}
	expires := cmd.ExpiresAt
	if !expires.IsZero() {
		expires = expires.UTC()
	}
	return []domain.Event{CredentialIssued{NodeID: cmd.NodeID, SecretHash: cmd.SecretHash, ExpiresAt: expires, At: cmd.At.UTC()}}, nil
}

// Revoke revokes an active credential.
func (c Credential) Revoke(cmd RevokeCredential) ([]domain.Event, error) {
	if err := domain.Admit(credentialEntity, c.NodeID, c.Status, CredentialAllowed, "nodeId", cmd.NodeID, CmdRevokeCredential, cmd.At); err != nil {
		return nil, err
	}
	if err := domain.ValidateText("reason", cmd.Reason, MaxReasonLength); err != nil {
		return nil, err
	}
	return []domain.Event{CredentialRevoked{NodeID: c.NodeID, Reason: cmd.Reason, At: cmd.At.UTC()}}, nil
}

func (c Credential) refuse(command string) error {
	return &domain.StateError{Entity: credentialEntity, ID: c.NodeID, Command: command, State: string(c.Status)}
}
