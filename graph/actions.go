package graph

// Actions the API asks the policy about, one per kind of read or change.
// Whether a tenant role's read is narrowed to its own tenant is decided by
// the resolvers (tenantScoped), not by the action.
const (
	ActionNodeRead        = "node.read"
	ActionNodeWrite       = "node.write"
	ActionJoinTokenWrite  = "jointoken.write"
	ActionJobRead         = "job.read"
	ActionJobSubmit       = "job.submit"
	ActionJobCancel       = "job.cancel"
	ActionTemplateRead    = "template.read"
	ActionTemplateWrite   = "template.write"
	ActionServiceRead     = "service.read"
	ActionServiceWrite    = "service.write"
	ActionTenantRead      = "tenant.read"
	ActionTenantWrite     = "tenant.write"
	ActionUserRead        = "user.read"
	ActionUserWrite       = "user.write"
	ActionTokenRead       = "token.read"
	ActionTokenWrite      = "token.write"
	ActionLocationRead    = "location.read"
	ActionLocationWrite   = "location.write"
	ActionEventRead       = "event.read"
	ActionAuditRead       = "audit.read"
	ActionProjectionRead  = "projection.read"
	ActionProjectionWrite = "projection.rebuild"
	ActionAgent           = "agent"
)
