package tenant

import (
	"slices"
	"time"

	"cairn/domain"
)

const tokenEntity = "api token"

// TokenStatus is where an API token is in its life. Expiry is not a status:
// it follows from ExpiresAt and the time of use (see Usable).
type TokenStatus string

const (
	TokenStatusActive  TokenStatus = "active"
	TokenStatusRevoked TokenStatus = "revoked"
)

// TokenStatuses lists every token status.
var TokenStatuses = []TokenStatus{TokenStatusActive, TokenStatusRevoked}

// Token commands, as the allowed-commands table and state errors spell them.
const (
	CmdIssueToken  = "issue"
	CmdRevokeToken = "revoke"
)

// TokenCommands lists every token command.
var TokenCommands = []string{CmdIssueToken, CmdRevokeToken}

// TokenAllowed lists the commands an existing token accepts in each status;
// issue is accepted only by a token that does not exist yet.
var TokenAllowed = map[TokenStatus][]string{
	TokenStatusActive:  {CmdRevokeToken},
	TokenStatusRevoked: {},
}

// TokenAllowedCommands returns the commands a token in status s accepts.
func TokenAllowedCommands(s TokenStatus) []string { return slices.Clone(TokenAllowed[s]) }

// APIToken is the state of one API token, folded from its events.
type APIToken struct {
	ID           string
	UserID       string
	Role         Role
	TenantID     string
	SecretHash   string // hex; the clear secret is never stored
	ExpiresAt    time.Time
	Status       TokenStatus
	RevokeReason string
	IssuedAt     time.Time
	RevokedAt    time.Time
}

// Exists reports whether the token has been issued.
func (t APIToken) Exists() bool { return t.Status != "" }

// Usable reports whether the token authenticates at time at.
func (t APIToken) Usable(at time.Time) bool {
	return t.Status == TokenStatusActive && at.Before(t.ExpiresAt)
}

// AllowedCommands returns the commands this token accepts now.
func (t APIToken) AllowedCommands() []string {
	if !t.Exists() {
		return []string{CmdIssueToken}
	}
	return TokenAllowedCommands(t.Status)
}

// Apply folds one event into the state; others are ignored.
func (t *APIToken) Apply(e domain.Event) {
	switch e := e.(type) {
	case TokenIssued:
		*t = APIToken{ID: e.TokenID, UserID: e.UserID, Role: e.Role, TenantID: e.TenantID,
			SecretHash: e.SecretHash, ExpiresAt: e.ExpiresAt, Status: TokenStatusActive, IssuedAt: e.At}
	case TokenRevoked:
		t.Status = TokenStatusRevoked
		t.RevokeReason = e.Reason
		t.RevokedAt = e.At
	}
}

// IssueToken issues an API token acting as UserID with Role (the caller checks
// that the user may hold that role). The caller generated the secret, shows it
// once, and passes only its hex hash.
type IssueToken struct {
	TokenID    string
	UserID     string
	Role       Role
	TenantID   string
	SecretHash string
	ExpiresAt  time.Time
	At         time.Time
}

// RevokeToken stops a token from authenticating.
type RevokeToken struct {
	TokenID string
	Reason  string
	At      time.Time
}

// Issue decides the issue of a token that does not exist yet.
func (t APIToken) Issue(c IssueToken) ([]domain.Event, error) {
	if t.Exists() {
		return nil, t.refuse(CmdIssueToken)
	}
	if err := domain.FirstError(
		domain.ValidateID("tokenId", c.TokenID),
		domain.ValidateID("userId", c.UserID),
		validateRoleAndTenant(c.Role, c.TenantID),
		domain.ValidateSecretHash("secretHash", c.SecretHash),
		domain.ValidateAt(c.At),
	); err != nil {
		return nil, err
	}
	if !c.ExpiresAt.After(c.At) {
		return nil, domain.Invalid("expiresAt", "must be after the time of issue")
	}
	return []domain.Event{TokenIssued{
		TokenID: c.TokenID, UserID: c.UserID, Role: c.Role, TenantID: c.TenantID,
		SecretHash: c.SecretHash, ExpiresAt: c.ExpiresAt.UTC(), At: c.At.UTC(),
	}}, nil
}

// Revoke revokes an active token (expired or not).
func (t APIToken) Revoke(c RevokeToken) ([]domain.Event, error) {
	if err := domain.Admit(tokenEntity, t.ID, t.Status, TokenAllowed, "tokenId", c.TokenID, CmdRevokeToken, c.At); err != nil {
		return nil, err
	}
	if err := domain.ValidateText("reason", c.Reason, MaxReasonLength); err != nil {
		return nil, err
	}
	return []domain.Event{TokenRevoked{TokenID: t.ID, Reason: c.Reason, At: c.At.UTC()}}, nil
}

func (t APIToken) refuse(command string) error {
	return &domain.StateError{Entity: tokenEntity, ID: t.ID, Command: command, State: string(t.Status)}
}
