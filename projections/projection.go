// Package projections keeps Cairn's read models: PostgreSQL tables built
// from the event log by projections, each applied in batches in one
// transaction together with its checkpoint, so every event takes effect
// exactly once however often the process stops.
//
// A Runner runs the registered projections concurrently, parks events a
// projection cannot apply (so one bad event never stops it), reports lag and
// rebuilds a projection without downtime: the new build fills new tables from
// position zero while the old ones keep serving, and the stable views in
// schema "read" switch to the new tables in one transaction when it has
// caught up.
package projections

import (
	"context"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"

	"cairn/domain"
	"cairn/eventstore"
)

// ReadSchema holds the stable views portals, GraphQL and analytics read.
const ReadSchema = "read"

// AnalyticsSchema holds the views analytics consumers (role cairn_analytics)
// may read.
const AnalyticsSchema = "analytics"

// Projection turns events into the rows of its tables. Implementations are
// stateless: everything they know lives in their tables, inside the
// transaction they are handed.
type Projection interface {
	// Name identifies the projection; it never changes.
	Name() string
	// Version changes whenever the tables, or how events fill them, change.
	// A new version is rebuilt from position zero into new tables.
	Version() int
	// Tables names the tables Setup creates, without schema or suffix. Each
	// is read through a stable view of the same name in schema "read".
	Tables() []string
	// Filter selects the events Apply receives.
	Filter() Filter
	// Setup creates the tables in t, with their primary keys.
	Setup(ctx context.Context, tx pgx.Tx, t Target) error
	// Index creates the tables' other indexes. A build fills its tables
	// without them, which is several times faster, and indexes them once it
	// has caught up with the log (before its views serve a rebuild).
	Index(ctx context.Context, tx pgx.Tx, t Target) error
	// Apply writes the effect of events, in global order, inside tx. It must
	// depend on nothing but the events and the tables: a rebuild from the
	// start must produce the same rows.
	Apply(ctx context.Context, tx pgx.Tx, t Target, events []Event) error
}

// Filter selects events by stream type.
type Filter struct {
	// StreamTypes the projection reads; empty reads every event.
	StreamTypes []string
	// Undecoded: the projection uses only the envelope (type, stream, time),
	// so an event whose payload does not decode is still applied.
	Undecoded bool
}

func (f Filter) match(e *Event) bool {
	return len(f.StreamTypes) == 0 || slices.Contains(f.StreamTypes, e.StreamType)
}

// Event is a recorded event with its payload decoded (and upcast).
type Event struct {
	eventstore.RecordedEvent
	// Data is the decoded payload; nil when DecodeErr is set.
	Data domain.Event
	// DecodeErr says why the payload did not decode (an unknown type, say).
	DecodeErr error
}

// EntityID is the id of the aggregate the event belongs to: its stream id
// without the "<stream type>-" prefix.
func (e *Event) EntityID() string {
	if len(e.StreamID) > len(e.StreamType) && e.StreamID[:len(e.StreamType)] == e.StreamType && e.StreamID[len(e.StreamType)] == '-' {
		return e.StreamID[len(e.StreamType)+1:]
	}
	return e.StreamID
}

// Target says where a projection's tables are: a schema and a suffix that
// carries the build (read.nodes_v3_b2), or a scratch schema with no suffix
// for an auditor's replay.
type Target struct {
	Schema string
	Suffix string
}

// Table returns the quoted, schema-qualified name of one of the projection's
// tables in this target.
func (t Target) Table(base string) string {
	return pgx.Identifier{t.Schema, base + t.Suffix}.Sanitize()
}

// Name returns the unquoted table name of base in this target.
func (t Target) Name(base string) string { return base + t.Suffix }

// buildTarget is where build n of a projection at version v lives.
func buildTarget(version, build int) Target {
	return Target{Schema: ReadSchema, Suffix: "_v" + strconv.Itoa(version) + "_b" + strconv.Itoa(build)}
}
