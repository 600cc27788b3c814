package eventstore

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Filter narrows reads in global order: the event history the API serves,
// subscriptions, exports. Empty fields match everything.
type Filter struct {
	StreamIDs     []string
	StreamTypes   []string
	EventTypes    []string
	Actor         string
	CorrelationID string
	Tenant        string
	// From and To bound the time an event was recorded: at or after From,
	// before To.
	From, To time.Time
}

// IsZero reports whether the filter matches every event.
func (f Filter) IsZero() bool {
	return len(f.StreamIDs) == 0 && len(f.StreamTypes) == 0 && len(f.EventTypes) == 0 &&
		f.Actor == "" && f.CorrelationID == "" && f.Tenant == "" && f.From.IsZero() && f.To.IsZero()
}

// Match is the filter in Go, for events already read (delivered live, say).
func (f Filter) Match(e *RecordedEvent) bool {
	return (len(f.StreamIDs) == 0 || slices.Contains(f.StreamIDs, e.StreamID)) &&
		(len(f.StreamTypes) == 0 || slices.Contains(f.StreamTypes, e.StreamType)) &&
		(len(f.EventTypes) == 0 || slices.Contains(f.EventTypes, e.Type)) &&
		(f.Actor == "" || e.Metadata.Actor == f.Actor) &&
		(f.CorrelationID == "" || e.Metadata.CorrelationID == f.CorrelationID) &&
		(f.Tenant == "" || e.Metadata.Tenant == f.Tenant) &&
		(f.From.IsZero() || !e.RecordedAt.Before(f.From)) &&
		(f.To.IsZero() || e.RecordedAt.Before(f.To))
}

// sql is the filter as SQL conditions, each starting with AND, written so
// the indexes of migration 00030 apply: the same column expressions, and the
// partial indexes' conditions implied by an equality.
func (f Filter) sql(args *[]any) string {
	var b strings.Builder
	arg := func(v any) string {
		*args = append(*args, v)
		return "$" + strconv.Itoa(len(*args))
	}
	if len(f.StreamIDs) > 0 {
		fmt.Fprintf(&b, " AND stream_id = ANY(%s)", arg(f.StreamIDs))
	}
	if len(f.StreamTypes) > 0 {
		fmt.Fprintf(&b, " AND stream_type = ANY(%s)", arg(f.StreamTypes))
	}
	if len(f.EventTypes) > 0 {
		fmt.Fprintf(&b, " AND event_type = ANY(%s)", arg(f.EventTypes))
	}
	if f.Actor != "" {
		fmt.Fprintf(&b, " AND actor = %s", arg(f.Actor))
	}
	if f.CorrelationID != "" {
		fmt.Fprintf(&b, " AND correlation_id = %s", arg(f.CorrelationID))
	}
	if f.Tenant != "" {
		fmt.Fprintf(&b, " AND tenant = %s", arg(f.Tenant))
	}
	if !f.From.IsZero() {
		fmt.Fprintf(&b, " AND recorded_at >= %s", arg(f.From))
	}
	if !f.To.IsZero() {
		fmt.Fprintf(&b, " AND recorded_at < %s", arg(f.To))
	}
	return b.String()
}
