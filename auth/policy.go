package auth

import (
	"cairn/domain/tenant"
	"fmt"
	"slices"
)

// Action names what a principal wants to do. Reads are one action per kind
// of entity; writes are grouped by what they risk.
type Action string

const (
	NodeRead         Action = "node.read"
	NodeEnroll       Action = "node.enroll"
	NodeUpdate       Action = "node.update" // labels, location
	NodeDrain        Action = "node.drain"  // drain, undrain
	NodeDecommission Action = "node.decommission"
	NodeJoinToken    Action = "node.join_token" // issue, revoke join tokens
	NodeHeartbeat    Action = "node.heartbeat"  // agent: connect
	NodeReportFacts  Action = "node.report_facts"

	JobRead        Action = "job.read" // jobs, their logs and results
	JobSubmit      Action = "job.submit"
	JobCancel      Action = "job.cancel"
	JobLease       Action = "job.lease" // agent: receive work
	JobAcknowledge Action = "job.acknowledge"
	JobStart       Action = "job.start"
	JobFinish      Action = "job.finish"
	JobLog         Action = "job.log" // agent: send log lines

	TemplateRead      Action = "template.read" // the catalog
	TemplateRegister  Action = "template.register"
	TemplatePublish   Action = "template.publish"
	TemplateDeprecate Action = "template.deprecate"

	ServiceRead    Action = "service.read" // services, resources, outputs
	ServiceCreate  Action = "service.create"
	ServiceStart   Action = "service.start"
	ServiceStop    Action = "service.stop"
	ServiceRemove  Action = "service.remove"
	ServiceCleanup Action = "service.cleanup" // mark leftovers removed by hand

	TenantRead   Action = "tenant.read"
	TenantCreate Action = "tenant.create"
	TenantUpdate Action = "tenant.update" // rename, suspend, resume

	UserRead   Action = "user.read"
	UserCreate Action = "user.create"
	UserUpdate Action = "user.update" // disable, enable

	TokenRead   Action = "token.read"
	TokenIssue  Action = "token.issue"
	TokenRevoke Action = "token.revoke"

	LocationRead   Action = "location.read"
	LocationCreate Action = "location.create"
	LocationUpdate Action = "location.update" // update, retire

	EventRead Action = "event.read" // the log itself: history, audit, replay

	ProjectionRead    Action = "projection.read" // read models' lag and errors
	ProjectionRebuild Action = "projection.rebuild"
)

// Actions lists every action.
var Actions = []Action{
	NodeRead, NodeEnroll, NodeUpdate, NodeDrain, NodeDecommission, NodeJoinToken, NodeHeartbeat, NodeReportFacts,
	JobRead, JobSubmit, JobCancel, JobLease, JobAcknowledge, JobStart, JobFinish, JobLog,
	TemplateRead, TemplateRegister, TemplatePublish, TemplateDeprecate,
	ServiceRead, ServiceCreate, ServiceStart, ServiceStop, ServiceRemove, ServiceCleanup,
	TenantRead, TenantCreate, TenantUpdate,
	UserRead, UserCreate, UserUpdate,
	TokenRead, TokenIssue, TokenRevoke,
	LocationRead, LocationCreate, LocationUpdate,
	EventRead,
	ProjectionRead, ProjectionRebuild,
}

// Scope says on which entities a role may take an action.
type Scope string

const (
	Anywhere     Scope = "any"
	OwnTenant    Scope = "own tenant"    // Resource.TenantID is the principal's tenant
	OwnNode      Scope = "own node"      // Resource.NodeID is the principal's node
	OwnTemplates Scope = "own templates" // Resource.Vendor is the principal's user id
)

// Resource is what Can needs to know about the entity an action touches.
// The API fills what applies: a service's or job's tenant, a job's or
// node's node, a template's vendor, the role a new user or token would get.
type Resource struct {
	TenantID string
	NodeID   string
	Vendor   string
	// Grants is the role that user.create or token.issue would hand out, or
	// that the user of user.update or the token of token.revoke holds.
	Grants Role
}

// Table is the policy: for each role, the actions it may take and where.
// An action missing from a role's row is forbidden to it.
var Table = map[Role]map[Action]Scope{
	tenant.RoleAdmin: everything(),
	tenant.RoleOperator: {
		NodeRead: Anywhere, NodeEnroll: Anywhere, NodeUpdate: Anywhere, NodeDrain: Anywhere,
		NodeDecommission: Anywhere, NodeJoinToken: Anywhere,
		JobRead: Anywhere, JobSubmit: Anywhere, JobCancel: Anywhere,
		TemplateRead: Anywhere,
		ServiceRead:  Anywhere, ServiceCleanup: Anywhere,
		TenantRead: Anywhere, TenantCreate: Anywhere, TenantUpdate: Anywhere,
		UserRead: Anywhere, UserCreate: Anywhere, UserUpdate: Anywhere,
		LocationRead: Anywhere, LocationCreate: Anywhere, LocationUpdate: Anywhere,
		EventRead: Anywhere, ProjectionRead: Anywhere,
	},
	tenant.RoleTenantAdmin: {
		ServiceRead: OwnTenant, ServiceCreate: OwnTenant, ServiceStart: OwnTenant, ServiceStop: OwnTenant, ServiceRemove: OwnTenant,
		UserRead: OwnTenant, UserCreate: OwnTenant, UserUpdate: OwnTenant,
		TokenRead: OwnTenant, TokenIssue: OwnTenant, TokenRevoke: OwnTenant,
		TenantRead: OwnTenant, JobRead: OwnTenant, EventRead: OwnTenant,
		TemplateRead: Anywhere, LocationRead: Anywhere,
	},
	tenant.RoleTenantMember: {
		ServiceRead: OwnTenant, ServiceCreate: OwnTenant, ServiceStart: OwnTenant, ServiceStop: OwnTenant, ServiceRemove: OwnTenant,
		TenantRead: OwnTenant, JobRead: OwnTenant, EventRead: OwnTenant,
		TemplateRead: Anywhere, LocationRead: Anywhere,
	},
	tenant.RoleVendor: {
		TemplateRead: Anywhere, TemplateRegister: OwnTemplates, TemplatePublish: OwnTemplates, TemplateDeprecate: OwnTemplates,
	},
	tenant.RoleAuditor: {
		NodeRead: Anywhere, JobRead: Anywhere, TemplateRead: Anywhere, ServiceRead: Anywhere, TenantRead: Anywhere,
		UserRead: Anywhere, TokenRead: Anywhere, LocationRead: Anywhere, EventRead: Anywhere,
	},
	RoleAgent: {
		NodeRead: OwnNode, NodeHeartbeat: OwnNode, NodeReportFacts: OwnNode,
		JobRead: OwnNode, JobLease: OwnNode, JobAcknowledge: OwnNode, JobStart: OwnNode, JobFinish: OwnNode, JobLog: OwnNode,
	},
}

// Grants lists, for each role that may create users or issue tokens, the
// roles it may hand out, and so manage (update users, revoke tokens):
// nobody hands out more than they hold, and only an admin makes admins.
var Grants = map[Role][]Role{
	tenant.RoleAdmin:       {tenant.RoleAdmin, tenant.RoleOperator, tenant.RoleTenantAdmin, tenant.RoleTenantMember, tenant.RoleVendor, tenant.RoleAuditor},
	tenant.RoleOperator:    {tenant.RoleOperator, tenant.RoleTenantAdmin, tenant.RoleTenantMember, tenant.RoleVendor, tenant.RoleAuditor},
	tenant.RoleTenantAdmin: {tenant.RoleTenantAdmin, tenant.RoleTenantMember},
}

func everything() map[Action]Scope {
	m := make(map[Action]Scope, len(Actions))
	for _, a := range Actions {
		m[a] = Anywhere
	}
	return m
}

// Can returns nil when p may take action on r, else a *ForbiddenError that
// says why.
func Can(p Principal, action Action, r Resource) error {
	deny := func(format string, args ...any) error {
		return &ForbiddenError{Role: p.Role, Action: action, Reason: fmt.Sprintf(format, args...)}
	}
	if (p.Role == RoleAgent) != (p.Kind == KindAgent) {
		return deny("an agent acts only with its node credential, and a node credential only as an agent")
	}
	scope, ok := Table[p.Role][action]
	if !ok {
		return deny("the role does not include this action")
	}
	switch scope {
	case OwnTenant:
		if p.TenantID == "" || r.TenantID != p.TenantID {
			return deny("it concerns another tenant than %q", p.TenantID)
		}
	case OwnNode:
		if p.NodeID == "" || r.NodeID != p.NodeID {
			return deny("it concerns another node than %q", p.NodeID)
		}
	case OwnTemplates:
		if p.UserID == "" || r.Vendor != p.UserID {
			return deny("the template belongs to another vendor")
		}
	}
	switch action {
	case UserCreate, TokenIssue:
		if !slices.Contains(Grants[p.Role], r.Grants) {
			return deny("it would hand out role %q", r.Grants)
		}
	case UserUpdate, TokenRevoke:
		// Nobody manages a user or token of a role they could not hand out:
		// an operator does not disable an admin.
		if !slices.Contains(Grants[p.Role], r.Grants) {
			return deny("it concerns a user or token of role %q", r.Grants)
		}
	}
	return nil
}
