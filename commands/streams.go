package commands

// Stream types of the enrollment aggregates (domain/jointoken).
const (
	JoinTokenStream      = "join_token"
	NodeCredentialStream = "node_credential"
)
