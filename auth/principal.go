// Package auth is Cairn's access control: it authenticates bearer tokens
// into principals and decides, by an explicit role × action table, what a
// principal may do. Command handlers do not authorize; the API calls Can
// before it calls them.
package auth

import (
	"slices"
	"time"

	"cairn/commands"
	"cairn/domain/tenant"
)

// Kind says whether a principal is a person (or their automation) or a
// node's agent.
type Kind string

const (
	KindUser  Kind = "user"
	KindAgent Kind = "agent"
)

// Role is what a principal may do: one of the user roles of domain/tenant,
// or RoleAgent, which only a node's credential carries.
type Role = tenant.Role

// RoleAgent is the role of a node credential: it acts for its node only.
const RoleAgent Role = "agent"

// Roles lists every role a principal may have.
var Roles = append(slices.Clone(tenant.Roles), RoleAgent)

// Principal is who a request acts as.
type Principal struct {
	Kind Kind
	// ID is the actor recorded in the log: the user id, or the node id for
	// an agent.
	ID       string
	UserID   string // users only
	Name     string // the user's display name; users only
	TokenID  string // the API token's id; "node.<node id>" for an agent
	Role     Role
	TenantID string // tenant roles only
	NodeID   string // agents only
	// ExpiresAt is when the token stops working; zero: when revoked.
	ExpiresAt time.Time
}

// Meta returns the command metadata of a command this principal sends.
func (p Principal) Meta(commandID, correlationID string) commands.Meta {
	return commands.Meta{CommandID: commandID, CorrelationID: correlationID, Actor: p.ID, Tenant: p.TenantID}
}
