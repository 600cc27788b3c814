package audit

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"

	"cairn/eventstore"
)

// Copier writes an export that arrives in pieces (a download that broke,
// then one resuming after the last whole event line it received) as one
// file: every event line as received, and a trailer of its own over all of
// them, as a single export of the same stretch would have written.
type Copier struct {
	w          *bufio.Writer
	digest     hash.Hash
	heads      map[string]Head
	events     int64
	first      string
	last       string
	checkpoint *Checkpoint
	from, to   string
	stream     string
	pieces     int
	done       bool
}

// NewCopier writes to w an export asked for with these --from, --to and
// --stream texts (they are repeated in the trailer).
func NewCopier(w io.Writer, from, to, stream string) *Copier {
	return &Copier{w: bufio.NewWriterSize(w, 1<<20), digest: sha256.New(), heads: map[string]Head{}, from: from, to: to, stream: stream}
}

// ErrBrokenExport is a piece that ended before its trailer.
var ErrBrokenExport = errors.New("the export ended before its trailer")

// Copy copies one piece. It returns nil once the piece's trailer came (the
// copy is then complete: see Close), and an error wrapping
// ErrBrokenExport when the piece ended early; After then says where to
// resume. A line that is not an export line is an error of its own.
func (c *Copier) Copy(r io.Reader) error {
	c.pieces++
	br := bufio.NewReaderSize(r, 1<<20)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err != nil {
			// A line without its end is a broken one: it is dropped, and
			// the next piece starts after the last whole one.
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("%w (after cursor %q)", ErrBrokenExport, c.last)
			}
			return fmt.Errorf("%w: %w", ErrBrokenExport, err)
		}
		var probe struct {
			Checkpoint *Checkpoint `json:"checkpoint"`
			Trailer    *Trailer    `json:"trailer"`
			Cursor     string      `json:"cursor"`
			Stream     string      `json:"stream"`
			Version    int64       `json:"version"`
			Hash       string      `json:"hash"`
		}
		if err := json.Unmarshal(bytes.TrimSpace(line), &probe); err != nil {
			return fmt.Errorf("line %d of piece %d of the export is not JSON: %w", n, c.pieces, err)
		}
		switch {
		case probe.Trailer != nil:
			c.done = true
			return nil
		case probe.Checkpoint != nil:
			if c.checkpoint == nil && c.events == 0 {
				c.checkpoint = probe.Checkpoint
				if _, err := c.w.Write(line); err != nil {
					return err
				}
			}
		case probe.Cursor != "" && probe.Stream != "":
			c.digest.Write(line)
			if _, err := c.w.Write(line); err != nil {
				return err
			}
			if c.events == 0 {
				c.first = probe.Cursor
			}
			c.events++
			c.last = probe.Cursor
			c.heads[probe.Stream] = Head{Version: probe.Version, Hash: probe.Hash}
		default:
			return fmt.Errorf("line %d of piece %d of the export is neither an event, a checkpoint nor a trailer", n, c.pieces)
		}
	}
}

// After is the cursor of the last event line copied ("" before the first):
// a resumed download asks for the events after it.
func (c *Copier) After() string { return c.last }

// Close writes the trailer of a complete copy and flushes it.
func (c *Copier) Close() (ExportSummary, error) {
	if !c.done {
		return ExportSummary{}, fmt.Errorf("%w: no trailer was received", ErrBrokenExport)
	}
	t := Trailer{Format: ExportFormat, Events: c.events, Streams: len(c.heads), From: c.from, To: c.to, Stream: c.stream,
		First: c.first, Last: c.last, Heads: c.heads, Digest: hex.EncodeToString(c.digest.Sum(nil)), Checkpoint: c.checkpoint}
	b, err := json.Marshal(struct {
		Trailer Trailer `json:"trailer"`
	}{t})
	if err != nil {
		return ExportSummary{}, err
	}
	if _, err := c.w.Write(append(b, '\n')); err != nil {
		return ExportSummary{}, err
	}
	if err := c.w.Flush(); err != nil {
		return ExportSummary{}, err
	}
	sum := ExportSummary{Events: c.events, Streams: len(c.heads), Digest: t.Digest}
	for _, f := range []struct {
		text string
		to   *eventstore.Cursor
	}{{c.first, &sum.First}, {c.last, &sum.Last}} {
		if f.text == "" {
			continue
		}
		if *f.to, err = eventstore.ParseCursor(f.text); err != nil {
			return sum, fmt.Errorf("the export's cursor %q: %w", f.text, err)
		}
	}
	return sum, nil
}
