package eventstore

import (
	"fmt"
	"strconv"
	"strings"
)

// Cursor is a place in the global order of the log. The order is the writing
// transaction's id, then the position: a reader that only reads below the
// oldest running transaction never sees a later cursor commit before an
// earlier one, so it never skips an event.
//
// Clients treat its string form as opaque.
type Cursor struct {
	TxID     uint64
	Position int64
}

// Start is the cursor before the first event.
var Start = Cursor{}

// IsZero reports whether c is the start of the log.
func (c Cursor) IsZero() bool { return c == Cursor{} }

// Less reports whether c comes before o in global order.
func (c Cursor) Less(o Cursor) bool {
	if c.TxID != o.TxID {
		return c.TxID < o.TxID
	}
	return c.Position < o.Position
}

// String is the opaque form handed to clients: "<tx>-<position>".
func (c Cursor) String() string {
	if c.IsZero() {
		return "0"
	}
	return strconv.FormatUint(c.TxID, 10) + "-" + strconv.FormatInt(c.Position, 10)
}

// ParseCursor reads a cursor from its string form. "" and "0" are the start.
func ParseCursor(s string) (Cursor, error) {
	if s == "" || s == "0" {
		return Start, nil
	}
	tx, pos, ok := strings.Cut(s, "-")
	if !ok {
		return Cursor{}, &MalformedCursorError{Cursor: s}
	}
	t, err1 := strconv.ParseUint(tx, 10, 64)
	p, err2 := strconv.ParseInt(pos, 10, 64)
	if err1 != nil || err2 != nil || p < 1 || t < 1 {
		return Cursor{}, &MalformedCursorError{Cursor: s}
	}
	return Cursor{TxID: t, Position: p}, nil
}

// MalformedCursorError reports a cursor string that this store did not make.
type MalformedCursorError struct{ Cursor string }

func (e *MalformedCursorError) Error() string {
	return fmt.Sprintf("malformed cursor %q: use a cursor returned by Cairn, or \"0\" for the start", e.Cursor)
}
