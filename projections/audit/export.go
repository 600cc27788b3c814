package audit

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash"
	"io"
	"strconv"
	"time"

	"cairn/eventstore"
)

// ExportOptions choose the events to export: a contiguous stretch of the
// global order, optionally of one stream.
type ExportOptions struct {
	// From: events after this cursor, or recorded at or after this time
	// (unset: from the start).
	From Point
	// To: events up to and including this cursor, or up to the last one
	// recorded at or before this time (unset: the head of the log now).
	To Point
	// StreamID limits the export to one stream.
	StreamID string
	// Range, when set, is told the stretch of the log the export covers
	// (events after from, up to and including to) before anything is
	// written: a server sends it ahead of the lines, so that a client can
	// resume a broken download up to the same end.
	Range func(from, to eventstore.Cursor)
}

// ExportSummary says what an export wrote.
type ExportSummary struct {
	Events  int64
	Streams int
	First   eventstore.Cursor
	Last    eventstore.Cursor
	// Digest is the SHA-256 (hex) of every event line, as in the trailer.
	Digest string
}

// ExportLine is one event line of an export. Payload and Metadata are the
// exact stored bytes, on which the hash is computed; where those bytes
// would not fit on one line (they hold a line break), they are given as
// strings in PayloadText and MetadataText instead.
type ExportLine struct {
	Position      int64           `json:"position"`
	Cursor        string          `json:"cursor"`
	Stream        string          `json:"stream"`
	StreamType    string          `json:"streamType"`
	Version       int64           `json:"version"`
	Type          string          `json:"type"`
	SchemaVersion int             `json:"schemaVersion"`
	Payload       json.RawMessage `json:"payload,omitempty"`
	PayloadText   *string         `json:"payloadText,omitempty"`
	Metadata      json.RawMessage `json:"metadata,omitempty"`
	MetadataText  *string         `json:"metadataText,omitempty"`
	CommandID     string          `json:"commandId,omitempty"`
	RecordedAt    string          `json:"recordedAt"`
	PrevHash      string          `json:"prevHash"`
	Hash          string          `json:"hash"`
}

// Trailer is the last line of an export: without it a file that lost its
// end would look complete. Heads holds each stream's last version and hash
// in the file, so that removing the last events of one stream, and fixing
// up the digest, still disagrees with the log (see VerifyAgainst).
type Trailer struct {
	Format  string          `json:"format"`
	Events  int64           `json:"events"`
	Streams int             `json:"streams"`
	From    string          `json:"from,omitempty"`
	To      string          `json:"to,omitempty"`
	Stream  string          `json:"stream,omitempty"`
	First   string          `json:"firstCursor,omitempty"`
	Last    string          `json:"lastCursor,omitempty"`
	Heads   map[string]Head `json:"heads"`
	Digest  string          `json:"digest"`
	// Checkpoint repeats the file's first line, when it has one.
	Checkpoint *Checkpoint `json:"checkpoint,omitempty"`
}

// Checkpoint is the log's chain checkpoint an export is checked against: its
// first line (`{"checkpoint": {...}}`), copied into the trailer. It comes
// from the checkpoint tables, not from the events, so events removed from the
// log before the export show when the file is verified: a head it recorded
// that the file lacks, or fewer events up to it than it counted. Exports of
// the whole log from its start carry the count and every stream's head; an
// export of one stream carries that stream's head; an export from a later
// point carries none.
type Checkpoint struct {
	ID      int64           `json:"id"`
	TakenAt string          `json:"takenAt"`
	Through string          `json:"through"`
	Events  int64           `json:"events,omitempty"`
	Heads   map[string]Head `json:"heads"`
}

// Head is a stream's last event in an export.
type Head struct {
	Version int64  `json:"version"`
	Hash    string `json:"hash"`
}

// ExportFormat names this layout in the trailer.
const ExportFormat = "cairn-export-v2"

// exportFormats are the formats VerifyFile reads: v1 files have no
// checkpoint line.
var exportFormats = map[string]bool{"cairn-export-v1": true, ExportFormat: true}

// Export writes the chosen events as NDJSON, one event per line in global
// order, then the trailer (`{"trailer": {...}}`).
func Export(ctx context.Context, store Log, w io.Writer, o ExportOptions) (ExportSummary, error) {
	var sum ExportSummary
	from, to, err := exportRange(ctx, store, o)
	if err != nil {
		return sum, err
	}
	if o.Range != nil {
		o.Range(from, to)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	cp, err := checkpointFor(ctx, store, o, from, to)
	if err != nil {
		return sum, err
	}
	if cp != nil {
		b, err := json.Marshal(struct {
			Checkpoint *Checkpoint `json:"checkpoint"`
		}{cp})
		if err != nil {
			return sum, err
		}
		if _, err := bw.Write(append(b, '\n')); err != nil {
			return sum, err
		}
	}
	x := &exporter{w: bw, digest: sha256.New(), heads: map[string]Head{}}
	if o.StreamID != "" {
		evs, err := store.ReadStream(ctx, o.StreamID, eventstore.ReadStreamOptions{AsOf: to})
		var nf *eventstore.StreamNotFoundError
		if err != nil && !errors.As(err, &nf) {
			return sum, err
		}
		for _, e := range evs {
			if from.Less(e.Cursor()) {
				if err := x.line(&e); err != nil {
					return sum, err
				}
			}
		}
	} else {
		err := store.ReadRange(ctx, from, to, 5000, eventstore.Filter{}, func(evs []eventstore.RecordedEvent) error {
			for i := range evs {
				if err := x.line(&evs[i]); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return sum, err
		}
	}
	t := Trailer{Format: ExportFormat, Events: x.events, Streams: len(x.heads), Stream: o.StreamID, Heads: x.heads,
		Digest: hex.EncodeToString(x.digest.Sum(nil)), Checkpoint: cp}
	if !o.From.IsZero() {
		t.From = o.From.String()
	}
	if !o.To.IsZero() {
		t.To = o.To.String()
	}
	if x.events > 0 {
		t.First, t.Last = x.first.String(), x.last.String()
	}
	b, err := json.Marshal(struct {
		Trailer Trailer `json:"trailer"`
	}{t})
	if err != nil {
		return sum, err
	}
	if _, err := bw.Write(append(b, '\n')); err != nil {
		return sum, err
	}
	if err := bw.Flush(); err != nil {
		return sum, err
	}
	return ExportSummary{Events: x.events, Streams: len(x.heads), First: x.first, Last: x.last, Digest: t.Digest}, nil
}

// checkpointFor is the checkpoint an export carries (see Checkpoint): the
// latest one up to the export's end, for an export from the log's start.
func checkpointFor(ctx context.Context, store Log, o ExportOptions, from, to eventstore.Cursor) (*Checkpoint, error) {
	if !from.IsZero() {
		return nil, nil
	}
	// Up to the end asked for; without one, the latest checkpoint, which
	// may reach past the head when the log's tail was removed.
	var upTo eventstore.Cursor
	if !o.To.IsZero() {
		upTo = to
	}
	cp, err := store.LastCheckpoint(ctx, upTo)
	if err != nil || cp.ID == 0 {
		return nil, err
	}
	heads, err := store.CheckpointHeads(ctx, cp.ID, o.StreamID)
	if err != nil {
		return nil, err
	}
	out := &Checkpoint{ID: cp.ID, TakenAt: cp.TakenAt.UTC().Format(time.RFC3339Nano), Through: cp.Through.String(),
		Heads: make(map[string]Head, len(heads))}
	if o.StreamID == "" {
		out.Events = cp.Events
	}
	for id, h := range heads {
		out.Heads[id] = Head{Version: h.Version, Hash: hex.EncodeToString(h.Hash)}
	}
	return out, nil
}

// exportRange turns the options into cursors: events after from up to and
// including to. Times become the cursors of the events around them, so an
// export is always one unbroken stretch of the global order.
func exportRange(ctx context.Context, store Log, o ExportOptions) (eventstore.Cursor, eventstore.Cursor, error) {
	var from, to eventstore.Cursor
	for _, p := range []Point{o.From, o.To} {
		if err := check(ctx, store, p); err != nil {
			return from, to, err
		}
	}
	head, err := store.Head(ctx)
	if err != nil {
		return from, to, err
	}
	to = head
	switch {
	case !o.From.Time.IsZero():
		// After the last event recorded before the time.
		if from, err = store.LastBefore(ctx, o.From.Time, false); err != nil {
			return from, to, err
		}
	case !o.From.Cursor.IsZero():
		from = o.From.Cursor
	}
	switch {
	case !o.To.Time.IsZero():
		if to, err = store.LastBefore(ctx, o.To.Time, true); err != nil {
			return from, to, err
		}
		if head.Less(to) {
			to = head
		}
	case o.To.Start:
		to = eventstore.Start
	case !o.To.Cursor.IsZero():
		to = o.To.Cursor
	}
	return from, to, nil
}

type exporter struct {
	w      *bufio.Writer
	digest hash.Hash
	heads  map[string]Head
	events int64
	first  eventstore.Cursor
	last   eventstore.Cursor
	buf    bytes.Buffer
}

// line writes one event. It is built by hand, not marshalled: the payload
// and metadata must keep their exact bytes, which json.Marshal would
// re-encode.
func (x *exporter) line(e *eventstore.RecordedEvent) error {
	b := &x.buf
	b.Reset()
	c := e.Cursor()
	b.WriteString(`{"position":`)
	b.WriteString(strconv.FormatInt(e.Position, 10))
	b.WriteString(`,"cursor":"`)
	b.WriteString(c.String())
	b.WriteString(`","stream":`)
	writeString(b, e.StreamID)
	b.WriteString(`,"streamType":`)
	writeString(b, e.StreamType)
	b.WriteString(`,"version":`)
	b.WriteString(strconv.FormatInt(e.Version, 10))
	b.WriteString(`,"type":`)
	writeString(b, e.Type)
	b.WriteString(`,"schemaVersion":`)
	b.WriteString(strconv.Itoa(e.SchemaVersion))
	writeRaw(b, "payload", e.Payload)
	writeRaw(b, "metadata", e.RawMetadata)
	if e.CommandID != "" {
		b.WriteString(`,"commandId":`)
		writeString(b, e.CommandID)
	}
	b.WriteString(`,"recordedAt":"`)
	b.WriteString(e.RecordedAt.UTC().Format(time.RFC3339Nano))
	b.WriteString(`","prevHash":"`)
	b.WriteString(hex.EncodeToString(e.PrevHash))
	b.WriteString(`","hash":"`)
	b.WriteString(hex.EncodeToString(e.Hash))
	b.WriteString("\"}\n")
	x.digest.Write(b.Bytes())
	if _, err := x.w.Write(b.Bytes()); err != nil {
		return err
	}
	if x.events == 0 {
		x.first = c
	}
	x.events++
	x.last = c
	x.heads[e.StreamID] = Head{Version: e.Version, Hash: hex.EncodeToString(e.Hash)}
	return nil
}

func writeString(b *bytes.Buffer, s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			enc, _ := json.Marshal(s)
			b.Write(enc)
			return
		}
	}
	b.WriteByte('"')
	b.WriteString(s)
	b.WriteByte('"')
}

// writeRaw writes a JSON value as is, or as a string when its bytes hold a
// line break (valid JSON whitespace, but NDJSON allows none).
func writeRaw(b *bytes.Buffer, name string, raw []byte) {
	if bytes.ContainsAny(raw, "\r\n") {
		b.WriteString(`,"` + name + `Text":`)
		writeString(b, string(raw))
		return
	}
	b.WriteString(`,"` + name + `":`)
	b.Write(raw)
}
