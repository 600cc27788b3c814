// Package model holds the Go types of the GraphQL schema: the ones gqlgen
// generates and the custom scalars.
package model

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"cairn/eventstore"
)

// JSON is any JSON value, passed through as JSON.
type JSON json.RawMessage

// MarshalGQL writes the raw JSON; an empty value is null.
func (j JSON) MarshalGQL(w io.Writer) {
	if len(j) == 0 {
		_, _ = io.WriteString(w, "null")
		return
	}
	_, _ = w.Write(j)
}

// UnmarshalGQL accepts whatever the GraphQL input decoded to.
func (j *JSON) UnmarshalGQL(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("JSON: %w", err)
	}
	*j = b
	return nil
}

// Cursor is an event log cursor in its opaque string form.
type Cursor eventstore.Cursor

// MarshalGQL writes the cursor as a JSON string.
func (c Cursor) MarshalGQL(w io.Writer) {
	_, _ = io.WriteString(w, strconv.Quote(eventstore.Cursor(c).String()))
}

// UnmarshalGQL parses a cursor Cairn handed out earlier.
func (c *Cursor) UnmarshalGQL(v any) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("a cursor is a string, not %T", v)
	}
	p, err := eventstore.ParseCursor(s)
	if err != nil {
		return err
	}
	*c = Cursor(p)
	return nil
}
