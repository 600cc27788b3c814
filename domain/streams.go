package domain

import "strings"

// Stream types, one per aggregate. An instance's events are the stream
// "<type>-<id>" (StreamID).
const (
	NodeStream           = "node"
	JobStream            = "job"
	ScheduleStream       = "schedule"
	TemplateStream       = "template"
	ServiceStream        = "service"
	ServiceNameStream    = "service_name" // which service holds a name within its tenant
	ResourceStream       = "resource"
	TenantStream         = "tenant"
	UserStream           = "user"
	TokenStream          = "api_token"
	LocationStream       = "location"
	JoinTokenStream      = "join_token"
	NodeCredentialStream = "node_credential"
)

// ObjectStreamTypes are the stream types whose instances the API shows as
// objects with an id (its Node interface). An id is unique across them:
// creating an object with an id another kind already has is refused.
func ObjectStreamTypes() []string {
	return []string{NodeStream, JobStream, ScheduleStream, ServiceStream, ResourceStream,
		TenantStream, UserStream, LocationStream}
}

// StreamID is the stream of one aggregate instance: "<type>-<id>".
func StreamID(streamType, id string) string { return streamType + "-" + id }

// EntityID is the id of the instance whose stream is streamID, when that
// stream is of streamType.
func EntityID(streamType, streamID string) (string, bool) {
	return strings.CutPrefix(streamID, streamType+"-")
}

// EntityIDOf is EntityID for a stream known to be of streamType.
func EntityIDOf(streamType, streamID string) string {
	id, _ := EntityID(streamType, streamID)
	return id
}
