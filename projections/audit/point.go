// Package audit is the auditors' toolbox: any entity as it was at a moment
// (replaying its own stream), what changed between two moments, an export
// of the log as NDJSON that can be verified offline, and a replay of every
// projection into a scratch schema so the whole system can be queried as it
// was.
package audit

import (
	"context"
	"fmt"
	"strings"
	"time"

	"cairn/domain"
	"cairn/eventstore"
	"cairn/projections"
)

// Point is a moment in the log: a cursor (an event) or a time. The zero
// Point is unset.
type Point struct {
	Cursor eventstore.Cursor
	Time   time.Time
	// Start is the beginning of the log (cursor "0").
	Start bool
}

// IsZero reports whether the point is unset.
func (p Point) IsZero() bool { return !p.Start && p.Cursor.IsZero() && p.Time.IsZero() }

func (p Point) String() string {
	switch {
	case p.Start:
		return "0"
	case !p.Time.IsZero():
		return p.Time.UTC().Format(time.RFC3339Nano)
	default:
		return p.Cursor.String()
	}
}

// MalformedPointError: text that is neither a cursor nor a time.
type MalformedPointError struct{ Text string }

func (e *MalformedPointError) Error() string {
	return fmt.Sprintf("%q is neither a cursor (as Cairn returns them, or 0 for the start) nor a time (RFC 3339, e.g. 2025-06-01T12:00:00Z)", e.Text)
}

// Is makes errors.Is(err, domain.ErrInvalid) true.
func (e *MalformedPointError) Is(target error) bool { return target == domain.ErrInvalid }

// ParsePoint reads a cursor ("<tx>-<position>", or "0" for the start) or a
// time (RFC 3339, or a date, read as midnight UTC).
func ParsePoint(s string) (Point, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Point{}, &MalformedPointError{Text: s}
	}
	if s == "0" {
		return Point{Start: true}, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return Point{Time: t.UTC()}, nil
		}
	}
	c, err := eventstore.ParseCursor(s)
	if err != nil {
		return Point{}, &MalformedPointError{Text: s}
	}
	return Point{Cursor: c}, nil
}

// check refuses a cursor that names no event and a time before the first
// event: either would silently mean "nothing".
func check(ctx context.Context, store Log, p Point) error {
	switch {
	case p.Start || p.IsZero():
		return nil
	case !p.Time.IsZero():
		first, err := store.ReadAll(ctx, eventstore.Start, 1, eventstore.Filter{})
		if err != nil {
			return err
		}
		if len(first) == 0 || p.Time.Before(first[0].RecordedAt) {
			e := &projections.BeforeFirstEventError{Time: p.Time}
			if len(first) > 0 {
				e.First = first[0].RecordedAt
			}
			return e
		}
		return nil
	default:
		return projections.CheckCursor(ctx, store, p.Cursor)
	}
}
