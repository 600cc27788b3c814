package audit

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"sort"
	"time"

	"cairn/eventstore"
)

// Problem is one place where an export fails verification.
type Problem struct {
	// Line is the 1-based line of the file (0: the file as a whole).
	Line int
	// The event on that line, when the line could be read as one.
	Position int64
	StreamID string
	Version  int64
	Reason   string
}

func (p Problem) Error() string {
	switch {
	case p.Line == 0:
		return p.Reason
	case p.StreamID == "":
		return fmt.Sprintf("line %d: %s", p.Line, p.Reason)
	default:
		return fmt.Sprintf("line %d (event at position %d, stream %q, version %d): %s", p.Line, p.Position, p.StreamID, p.Version, p.Reason)
	}
}

// FileReport is the outcome of verifying an export.
type FileReport struct {
	Lines   int
	Events  int64
	Streams int
	// Anchored lists streams whose first event in the file is not their
	// first event: the export began mid-stream, so that event's link to the
	// one before it can only be checked against the log.
	Anchored []string
	Trailer  *Trailer
	// Checkpoint is the log's chain checkpoint the file carried, if any.
	Checkpoint *Checkpoint
	// Problems, in line order; the first is where the file first breaks.
	Problems []Problem
}

// OK reports whether the file verified.
func (r FileReport) OK() bool { return len(r.Problems) == 0 }

// First is the first problem (nil when the file verified).
func (r FileReport) First() *Problem {
	if len(r.Problems) == 0 {
		return nil
	}
	return &r.Problems[0]
}

// maxProblems bounds the report: after the first break, later lines of a
// tampered file mostly repeat the news.
const maxProblems = 100

type streamState struct {
	version int64
	hash    []byte
}

// VerifyFile checks an export offline: every line an event whose hash
// matches its content, events in global order, each stream's events
// consecutive and chained to each other, and a trailer whose counts, digest
// and stream heads match the lines. So an edited line, a line removed,
// added or moved, and a file cut short (at any line, including the end of a
// stream) all fail, naming the first line that breaks.
//
// A file rewritten consistently from scratch (every hash recomputed) cannot
// be caught offline; VerifyAgainst compares a file with the log itself.
func VerifyFile(r io.Reader) (FileReport, error) {
	var rep FileReport
	digest := sha256.New()
	streams := map[string]*streamState{}
	var last eventstore.Cursor
	lastLine := 0
	cp := checkpointCheck{seen: map[string]bool{}}
	add := func(p Problem) {
		if len(rep.Problems) < maxProblems {
			rep.Problems = append(rep.Problems, p)
		}
	}
	lines := readLines(r)
	defer lines.stop()
	for {
		l, ok, err := lines.next()
		if err != nil {
			return rep, fmt.Errorf("read export: %w", err)
		}
		if !ok {
			break
		}
		rep.Lines++
		n := rep.Lines
		if rep.Trailer != nil {
			add(Problem{Line: n, Reason: "a line after the trailer: lines were appended to the export"})
			continue
		}
		if !bytes.HasSuffix(l.raw, []byte("\n")) {
			add(Problem{Line: n, Reason: "the last line is cut short (no line end): the file was truncated"})
			break
		}
		if l.notJSON != "" {
			add(Problem{Line: n, Reason: "not a JSON object: " + l.notJSON})
			continue
		}
		if l.checkpoint != nil {
			if n != 1 {
				add(Problem{Line: n, Reason: "a checkpoint line after the first line: lines were moved or added"})
				continue
			}
			rep.Checkpoint = l.checkpoint
			if err := cp.start(l.checkpoint); err != nil {
				add(Problem{Line: n, Reason: "the checkpoint line is malformed: " + err.Error()})
			}
			continue
		}
		if l.trailer != nil {
			rep.Trailer = l.trailer
			checkTrailer(&rep, l.trailer, hex.EncodeToString(digest.Sum(nil)), streams, n, add)
			cp.finish(rep.Checkpoint, l.trailer.Checkpoint, n, add)
			continue
		}
		digest.Write(l.raw)
		if l.notEvent != "" {
			add(Problem{Line: n, Reason: "not an event line: " + l.notEvent})
			continue
		}
		rep.Events++
		e := l.event
		p := Problem{Line: n, Position: l.line.Position, StreamID: l.line.Stream, Version: l.line.Version}
		if l.reason != "" {
			p.Reason = l.reason
			add(p)
			continue
		}
		if !last.Less(e.Cursor()) {
			p.Reason = fmt.Sprintf("out of order: it does not come after the event on line %d in global order; lines were moved", lastLine)
			add(p)
		}
		last, lastLine = e.Cursor(), n

		st := streams[e.StreamID]
		switch {
		case st == nil && e.Version == 1 && !bytes.Equal(e.PrevHash, eventstore.ZeroHash):
			p.Reason = "the first event of its stream must link to the zero hash"
			add(p)
		case st == nil && e.Version > 1:
			rep.Anchored = append(rep.Anchored, e.StreamID)
		case st != nil && e.Version != st.version+1:
			p.Reason = fmt.Sprintf("its stream jumps from version %d to %d: an event is missing or out of order", st.version, e.Version)
			add(p)
		case st != nil && !bytes.Equal(e.PrevHash, st.hash):
			p.Reason = "its previous-hash link does not match the hash of the stream's event before it"
			add(p)
		}
		if !l.hashMatches {
			p.Reason = "its hash does not match its content: the event was altered"
			add(p)
		}
		if st == nil {
			st = &streamState{}
			streams[e.StreamID] = st
		}
		st.version, st.hash = e.Version, e.Hash
		cp.event(e, p, add)
	}
	rep.Streams = len(streams)
	if rep.Trailer == nil {
		add(Problem{Line: rep.Lines, Reason: fmt.Sprintf("the file ends at line %d without its trailer: it was truncated, or is not a complete export", rep.Lines)})
	}
	sort.Strings(rep.Anchored)
	sort.SliceStable(rep.Problems, func(i, j int) bool { return rep.Problems[i].Line < rep.Problems[j].Line })
	return rep, nil
}

// parsedLine is one line of an export read on its own: what it holds and
// whether its hash matches its content. What depends on the lines before
// it (order, chains, the digest) VerifyFile checks in order.
type parsedLine struct {
	raw        []byte
	checkpoint *Checkpoint
	trailer    *Trailer
	line       ExportLine
	event      eventstore.RecordedEvent
	// notJSON and notEvent say why the line could not be read; reason why
	// it does not make an event.
	notJSON, notEvent, reason string
	hashMatches               bool
}

// parseLine reads one line; one JSON parse reads any kind of line.
func parseLine(raw []byte) parsedLine {
	out := parsedLine{raw: raw}
	if !bytes.HasSuffix(raw, []byte("\n")) {
		return out
	}
	var probe struct {
		ExportLine
		Trailer    *Trailer    `json:"trailer"`
		Checkpoint *Checkpoint `json:"checkpoint"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		// Say which: not JSON at all, or not the fields of an event.
		var kind struct {
			Trailer    *Trailer    `json:"trailer"`
			Checkpoint *Checkpoint `json:"checkpoint"`
		}
		if kerr := json.Unmarshal(raw, &kind); kerr != nil {
			out.notJSON = kerr.Error()
			return out
		}
		if kind.Checkpoint == nil && kind.Trailer == nil {
			out.notEvent = err.Error()
			return out
		}
		probe.Trailer, probe.Checkpoint = kind.Trailer, kind.Checkpoint
	}
	out.checkpoint, out.trailer, out.line = probe.Checkpoint, probe.Trailer, probe.ExportLine
	if out.checkpoint != nil || out.trailer != nil {
		return out
	}
	out.event, out.reason = out.line.event()
	if out.reason == "" {
		out.hashMatches = bytes.Equal(eventstore.HashOf(out.event), out.event.Hash)
	}
	return out
}

// lineChunk is a run of consecutive lines, parsed by one worker.
type lineChunk struct {
	lines  []parsedLine
	err    error // reading stopped here
	parsed chan struct{}
}

// lineReader parses an export's lines on every core and hands them back in
// order: parsing and hashing each event is most of the work of verifying,
// and lines do not depend on each other for it.
type lineReader struct {
	chunks chan *lineChunk
	done   chan struct{}
	cur    *lineChunk
	i      int
}

// verifyChunkLines is how many lines a worker parses at a time.
const verifyChunkLines = 256

func readLines(r io.Reader) *lineReader {
	workers := runtime.GOMAXPROCS(0)
	lr := &lineReader{chunks: make(chan *lineChunk, 2*workers), done: make(chan struct{})}
	work := make(chan *lineChunk, workers)
	for range workers {
		go func() {
			for c := range work {
				for i := range c.lines {
					c.lines[i] = parseLine(c.lines[i].raw)
				}
				close(c.parsed)
			}
		}()
	}
	go func() {
		defer close(lr.chunks)
		defer close(work)
		br := bufio.NewReaderSize(r, 1<<20)
		for {
			c := &lineChunk{parsed: make(chan struct{})}
			for len(c.lines) < verifyChunkLines {
				raw, err := br.ReadBytes('\n')
				if err != nil && !errors.Is(err, io.EOF) {
					c.err = err // the line it broke off is not verified
					break
				}
				if len(raw) > 0 {
					c.lines = append(c.lines, parsedLine{raw: raw})
				}
				if err != nil {
					break
				}
			}
			select {
			case work <- c:
			case <-lr.done:
				return
			}
			select {
			case lr.chunks <- c:
			case <-lr.done:
				return
			}
			if len(c.lines) < verifyChunkLines {
				return // the end of the file, or an error
			}
		}
	}()
	return lr
}

// next is the next line in file order; ok is false at the end.
func (lr *lineReader) next() (parsedLine, bool, error) {
	for lr.cur == nil || lr.i == len(lr.cur.lines) {
		if lr.cur != nil && lr.cur.err != nil {
			return parsedLine{}, false, lr.cur.err
		}
		c, ok := <-lr.chunks
		if !ok {
			return parsedLine{}, false, nil
		}
		<-c.parsed
		lr.cur, lr.i = c, 0
	}
	lr.i++
	return lr.cur.lines[lr.i-1], true, nil
}

// stop ends the reading early; the workers finish the chunks they hold.
func (lr *lineReader) stop() { close(lr.done) }

// checkTrailer compares the trailer with what the lines held.
func checkTrailer(rep *FileReport, t *Trailer, digest string, streams map[string]*streamState, line int, add func(Problem)) {
	bad := func(format string, args ...any) {
		add(Problem{Line: line, Reason: "trailer: " + fmt.Sprintf(format, args...)})
	}
	if !exportFormats[t.Format] {
		bad("format %q, want %q", t.Format, ExportFormat)
	}
	if t.Events != rep.Events {
		bad("says %d events, the file holds %d: lines were removed or added", t.Events, rep.Events)
	}
	if t.Digest != digest {
		bad("the digest of the event lines does not match: a line was changed, removed, added or moved")
	}
	names := make([]string, 0, len(t.Heads))
	for s := range t.Heads {
		names = append(names, s)
	}
	sort.Strings(names)
	for _, s := range names {
		h := t.Heads[s]
		st := streams[s]
		switch {
		case st == nil:
			bad("stream %q should end at version %d, but none of its events is in the file", s, h.Version)
		case st.version != h.Version:
			bad("stream %q should end at version %d, the file ends it at version %d: events at its end were removed", s, h.Version, st.version)
		case hex.EncodeToString(st.hash) != h.Hash:
			bad("stream %q should end with hash %s, the file ends it with %x", s, h.Hash, st.hash)
		}
	}
	for s := range streams {
		if _, ok := t.Heads[s]; !ok {
			bad("stream %q is in the file but not in the trailer's heads", s)
		}
	}
}

// event turns a line back into the recorded event its hash covers, or says
// why it cannot.
func (l ExportLine) event() (eventstore.RecordedEvent, string) {
	e := eventstore.RecordedEvent{Position: l.Position, StreamID: l.Stream, StreamType: l.StreamType, Version: l.Version,
		Type: l.Type, SchemaVersion: l.SchemaVersion, CommandID: l.CommandID, Payload: l.Payload, RawMetadata: l.Metadata}
	if l.PayloadText != nil {
		e.Payload = []byte(*l.PayloadText)
	}
	if l.MetadataText != nil {
		e.RawMetadata = []byte(*l.MetadataText)
	}
	c, err := eventstore.ParseCursor(l.Cursor)
	switch {
	case err != nil || c.IsZero():
		return e, fmt.Sprintf("cursor %q is malformed", l.Cursor)
	case c.Position != l.Position:
		return e, fmt.Sprintf("cursor %s does not match position %d", l.Cursor, l.Position)
	case l.Stream == "" || l.StreamType == "" || l.Type == "" || l.Version < 1 || l.SchemaVersion < 1:
		return e, "stream, stream type, type, version and schema version are required"
	case len(e.Payload) == 0 || len(e.RawMetadata) == 0:
		return e, "payload and metadata are required"
	}
	e.TxID = c.TxID
	at, err := time.Parse(time.RFC3339Nano, l.RecordedAt)
	if err != nil {
		return e, fmt.Sprintf("recordedAt %q is not an RFC 3339 time", l.RecordedAt)
	}
	e.RecordedAt = at
	if e.PrevHash, err = hex.DecodeString(l.PrevHash); err != nil || len(e.PrevHash) != sha256.Size {
		return e, "prevHash is not a SHA-256 in hex"
	}
	if e.Hash, err = hex.DecodeString(l.Hash); err != nil || len(e.Hash) != sha256.Size {
		return e, "hash is not a SHA-256 in hex"
	}
	return e, ""
}

// VerifyAgainst checks a verified file's trailer heads against the log: each
// stream's last event in the file must be that stream's event at that
// version in the database. It catches a file rewritten consistently from
// scratch, which offline verification cannot.
func VerifyAgainst(ctx context.Context, store Log, rep FileReport) ([]Problem, error) {
	if rep.Trailer == nil {
		return []Problem{{Reason: "the file has no trailer to compare with the log"}}, nil
	}
	var out []Problem
	names := make([]string, 0, len(rep.Trailer.Heads))
	for s := range rep.Trailer.Heads {
		names = append(names, s)
	}
	sort.Strings(names)
	for _, s := range names {
		h := rep.Trailer.Heads[s]
		evs, err := store.ReadStream(ctx, s, eventstore.ReadStreamOptions{FromVersion: h.Version, AsOfVersion: h.Version})
		var nf *eventstore.StreamNotFoundError
		switch {
		case errors.As(err, &nf) || err == nil && len(evs) == 0:
			out = append(out, Problem{StreamID: s, Version: h.Version, Reason: fmt.Sprintf("stream %q has no version %d in the log", s, h.Version)})
		case err != nil:
			return nil, err
		case hex.EncodeToString(evs[0].Hash) != h.Hash:
			out = append(out, Problem{StreamID: s, Version: h.Version, Position: evs[0].Position,
				Reason: fmt.Sprintf("stream %q version %d has hash %x in the log, %s in the file", s, h.Version, evs[0].Hash, h.Hash)})
		}
	}
	return out, nil
}

// checkpointCheck compares a file's events with the chain checkpoint it
// carries: every head the checkpoint recorded must be in the file with its
// hash, and a whole-log export must hold as many events up to it as the log
// held then.
type checkpointCheck struct {
	cp      *Checkpoint
	through eventstore.Cursor
	held    int64
	seen    map[string]bool
}

func (c *checkpointCheck) start(cp *Checkpoint) error {
	through, err := eventstore.ParseCursor(cp.Through)
	if err != nil {
		return err
	}
	c.cp, c.through = cp, through
	return nil
}

func (c *checkpointCheck) event(e eventstore.RecordedEvent, p Problem, add func(Problem)) {
	if c.cp == nil {
		return
	}
	if !c.through.Less(e.Cursor()) {
		c.held++
	}
	h, ok := c.cp.Heads[e.StreamID]
	if !ok || h.Version != e.Version {
		return
	}
	c.seen[e.StreamID] = true
	if hex.EncodeToString(e.Hash) != h.Hash {
		p.Reason = fmt.Sprintf("its hash differs from the one chain checkpoint %d recorded: the event was replaced", c.cp.ID)
		add(p)
	}
}

func (c *checkpointCheck) finish(header, trailer *Checkpoint, line int, add func(Problem)) {
	bad := func(format string, args ...any) {
		add(Problem{Line: line, Reason: fmt.Sprintf(format, args...)})
	}
	if (header == nil) != (trailer == nil) || header != nil && !reflect.DeepEqual(*header, *trailer) {
		bad("trailer: its checkpoint differs from the file's first line: the file was edited")
	}
	if c.cp == nil {
		return
	}
	names := make([]string, 0, len(c.cp.Heads))
	for s := range c.cp.Heads {
		if !c.seen[s] {
			names = append(names, s)
		}
	}
	sort.Strings(names)
	for _, s := range names {
		bad("stream %q: version %d, which chain checkpoint %d recorded (%s), is not in the file: the stream's events were removed from the log",
			s, c.cp.Heads[s].Version, c.cp.ID, c.cp.TakenAt)
	}
	if c.cp.Events > 0 && c.held != c.cp.Events {
		bad("the log held %d events up to cursor %s when chain checkpoint %d was taken (%s); the file has %d: %d events were removed",
			c.cp.Events, c.cp.Through, c.cp.ID, c.cp.TakenAt, c.held, c.cp.Events-c.held)
	}
}
