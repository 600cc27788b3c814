package tenant

// Limits on names and free text.
const (
	MaxNameLength        = 128
	MaxDescriptionLength = 1024
	MaxReasonLength      = 1024
)
