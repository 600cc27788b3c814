package eventstore

import (
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// eventColumns is what every read of whole events selects, in the order
// scanEvents decodes.
const eventColumns = `position, tx_id, stream_id, stream_type, version, event_type, schema_version,
	payload, metadata, coalesce(command_id, ''), recorded_at, prev_hash, hash`

// columnKind is how decodeEventRow reads a column.
type columnKind int

const (
	integerColumn columnKind = iota // int2, int4, int8, xid8 in binary
	textColumn                      // text in either format (the bytes are the same)
	jsonColumn                      // json or jsonb as text
	timeColumn                      // timestamptz in binary
	bytesColumn                     // bytea in binary
)

// eventColumnKinds follows eventColumns.
var eventColumnKinds = [...]columnKind{
	integerColumn, integerColumn, textColumn, textColumn, integerColumn, textColumn, integerColumn,
	jsonColumn, jsonColumn, textColumn, timeColumn, bytesColumn, bytesColumn,
}

// arrivesAs reports whether a column came in the form its kind reads: the
// formats pgx asks for when the statement is prepared, its default.
func (k columnKind) arrivesAs(f pgconn.FieldDescription) bool {
	switch k {
	case integerColumn:
		return f.Format == pgtype.BinaryFormatCode &&
			(f.DataTypeOID == pgtype.Int2OID || f.DataTypeOID == pgtype.Int4OID || f.DataTypeOID == pgtype.Int8OID || f.DataTypeOID == pgtype.XID8OID)
	case textColumn:
		return f.DataTypeOID == pgtype.TextOID || f.DataTypeOID == pgtype.VarcharOID
	case jsonColumn:
		return f.Format == pgtype.TextFormatCode && (f.DataTypeOID == pgtype.JSONOID || f.DataTypeOID == pgtype.JSONBOID)
	case timeColumn:
		return f.Format == pgtype.BinaryFormatCode && f.DataTypeOID == pgtype.TimestamptzOID
	case bytesColumn:
		return f.Format == pgtype.BinaryFormatCode && f.DataTypeOID == pgtype.ByteaOID
	}
	return false
}

// firstRead is how many events scanEvents makes room for at first: reads
// at the head of the log (every subscription, projection and command load)
// mostly find one to a few, and room for 64 was 20 KiB made per read. Room
// doubles from there up to smallRead.
const firstRead = 4

// smallRead is how many events a read finds before scanEvents takes it for
// a long one and makes room for its whole limit.
const smallRead = 64

// longRead bounds the room made at once for a long read (about 10 MiB of
// events). A read past it grows by doubling and is then copied into an
// array of its size: a catch-up reading 20,000 events at a time with room
// made for 16,384 allocated and copied three arrays a read, and ran at 0.83
// to 0.90 of a raw scan instead of 0.96 to 1.08.
const longRead = 32768

// scanEvents reads rows of eventColumns. Catch-up, replay and every
// projection read the log through here, so a row costs two allocations
// when the columns arrive in the expected formats: one for the bytes
// (payload, metadata, hashes) and one for the strings (stream id, command
// id, metadata values); stream and event types repeat and are shared.
// Other formats (a simple-protocol connection, say) go through pgx's Scan.
func scanEvents(rows pgx.Rows, capacity int) ([]RecordedEvent, error) {
	defer rows.Close()
	direct := wireFormatsExpected(rows.FieldDescriptions())
	names := make(map[string]string)
	out := make([]RecordedEvent, 0, max(min(capacity, firstRead), 1))
	for rows.Next() {
		if long := min(capacity, longRead); len(out) == cap(out) && len(out) >= smallRead && cap(out) < long {
			// A long read: make room for the whole limit at once. Growing
			// by doubling, or even fourfold, made catching up on a backlog
			// 15 % slower than decoding it alone (each growth a fresh array
			// of pointers to fault in, fill and scan). Limits past longRead
			// grow as usual from there.
			out = append(make([]RecordedEvent, 0, long), out...)
		}
		out = append(out, RecordedEvent{})
		e := &out[len(out)-1]
		var err error
		if direct {
			err = decodeEventRow(rows.RawValues(), e, names)
		} else {
			err = scanEventRow(rows, e)
		}
		if err != nil {
			return nil, fmt.Errorf("read events: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	if unused := cap(out) - len(out); unused*4 > cap(out) {
		// Batches are kept: the API's ring of recent events holds thousands
		// of events, each pinning the array it was read into. Under a flood
		// of small commits most reads find one or two events, and their
		// unused room was most of the server's memory after the flood.
		out = append(make([]RecordedEvent, 0, len(out)), out...)
	}
	return out, nil
}

// wireFormatsExpected reports whether decodeEventRow can read rows
// described by fields.
func wireFormatsExpected(fields []pgconn.FieldDescription) bool {
	if len(fields) != len(eventColumnKinds) {
		return false
	}
	for i, f := range fields {
		if !eventColumnKinds[i].arrivesAs(f) {
			return false
		}
	}
	return true
}

// scanEventRow is the general path, through pgx's type map.
func scanEventRow(rows pgx.Rows, e *RecordedEvent) error {
	var sv int32
	var payload, meta []byte
	if err := rows.Scan(&e.Position, &e.TxID, &e.StreamID, &e.StreamType, &e.Version, &e.Type, &sv,
		&payload, &meta, &e.CommandID, &e.RecordedAt, &e.PrevHash, &e.Hash); err != nil {
		return err
	}
	e.SchemaVersion = int(sv)
	e.Payload, e.RawMetadata = payload, meta
	if err := decodeMetadata(string(meta), &e.Metadata); err != nil {
		return fmt.Errorf("event %d: metadata does not decode: %w", e.Position, err)
	}
	return nil
}

// microsecondsFromUnixToY2K is where PostgreSQL's binary timestamps count
// from: 2000-01-01 UTC.
const microsecondsFromUnixToY2K = 946_684_800 * 1_000_000

// decodeEventRow decodes one row received as eventColumnKinds says.
func decodeEventRow(v [][]byte, e *RecordedEvent, names map[string]string) error {
	for i, c := range v {
		// Every column but the hashes is NOT NULL; the hashes are too, but
		// a NULL one is kept as nil, as pgx's Scan would.
		if c == nil && i < 11 {
			return fmt.Errorf("column %d of an event is NULL", i)
		}
	}
	var tx, sv, us int64
	for _, n := range []struct {
		to  *int64
		col int
	}{{&e.Position, 0}, {&tx, 1}, {&e.Version, 4}, {&sv, 6}, {&us, 10}} {
		switch b := v[n.col]; len(b) {
		case 2:
			*n.to = int64(int16(binary.BigEndian.Uint16(b)))
		case 4:
			*n.to = int64(int32(binary.BigEndian.Uint32(b)))
		case 8:
			*n.to = int64(binary.BigEndian.Uint64(b))
		default:
			return fmt.Errorf("column %d of an event is a number of %d bytes", n.col, len(b))
		}
	}
	e.TxID, e.SchemaVersion = uint64(tx), int(sv)
	e.RecordedAt = time.UnixMicro(us + microsecondsFromUnixToY2K)
	e.StreamType = intern(names, v[3])
	e.Type = intern(names, v[5])

	payload, meta, prev, hash := v[7], v[8], v[11], v[12]
	b := make([]byte, 0, len(payload)+len(meta)+len(prev)+len(hash))
	b = append(b, payload...)
	b = append(b, meta...)
	b = append(b, prev...)
	b = append(b, hash...)
	p, m := len(payload), len(payload)+len(meta)
	e.Payload = b[:p:p]
	e.RawMetadata = b[p:m:m]
	if prev != nil {
		e.PrevHash = b[m : m+len(prev) : m+len(prev)]
	}
	if hash != nil {
		e.Hash = b[m+len(prev):]
	}

	streamID, commandID := v[2], v[9]
	var sb strings.Builder
	sb.Grow(len(streamID) + len(commandID) + len(meta))
	sb.Write(streamID)
	sb.Write(commandID)
	sb.Write(meta)
	s := sb.String()
	e.StreamID = s[:len(streamID)]
	e.CommandID = s[len(streamID) : len(streamID)+len(commandID)]
	if err := decodeMetadata(s[len(streamID)+len(commandID):], &e.Metadata); err != nil {
		return fmt.Errorf("event %d: metadata does not decode: %w", e.Position, err)
	}
	return nil
}

// intern returns the string of b, shared with earlier rows of the read.
func intern(names map[string]string, b []byte) string {
	if s, ok := names[string(b)]; ok {
		return s
	}
	s := string(b)
	names[s] = s
	return s
}
