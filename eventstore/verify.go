package eventstore

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

// ChainBreak names an event whose place in its stream's hash chain is wrong.
type ChainBreak struct {
	StreamID string
	Version  int64
	Position int64
	Reason   string
}

func (b ChainBreak) Error() string {
	return fmt.Sprintf("event at position %d (stream %q, version %d): %s", b.Position, b.StreamID, b.Version, b.Reason)
}

// VerifyReport is the outcome of Verify.
type VerifyReport struct {
	Streams int64
	Events  int64
	// Breaks lists the first break of each broken stream, by position; a
	// removed tail of the whole log is a break with no stream.
	Breaks []ChainBreak
	// Checkpoint is the chain checkpoint the log was compared with (nil
	// when none was taken yet).
	Checkpoint *ChainCheckpoint
}

// OK reports whether every chain verified.
func (r VerifyReport) OK() bool { return len(r.Breaks) == 0 }

// First is the earliest break in global order (nil when all is well).
func (r VerifyReport) First() *ChainBreak {
	if len(r.Breaks) == 0 {
		return nil
	}
	return &r.Breaks[0]
}

// Chain checks events of one stream in version order, one at a time. It is
// shared by Verify and by offline verification of exported files.
type Chain struct {
	stream   string
	version  int64
	prevHash []byte
	broken   bool
}

// Next checks e against the chain so far and returns a break, if any. After
// the first break of a stream the rest of it is not reported again.
func (c *Chain) Next(e RecordedEvent) *ChainBreak {
	if e.StreamID != c.stream {
		*c = Chain{stream: e.StreamID, prevHash: ZeroHash}
	}
	if c.broken {
		return nil
	}
	brk := func(reason string) *ChainBreak {
		c.broken = true
		return &ChainBreak{StreamID: e.StreamID, Version: e.Version, Position: e.Position, Reason: reason}
	}
	c.version++
	switch {
	case e.Version != c.version:
		return brk(fmt.Sprintf("expected version %d here: an event is missing or out of order", c.version))
	case !bytes.Equal(e.PrevHash, c.prevHash):
		return brk("its previous-hash link does not match the hash of the event before it")
	case !bytes.Equal(HashOf(e), e.Hash):
		return brk("its hash does not match its content: the event was altered")
	}
	c.prevHash = e.Hash
	return nil
}

// Verify recomputes every stream's hash chain (or one stream's) and reports
// the events that break it.
func (s *Store) Verify(ctx context.Context, streamID string) (VerifyReport, error) {
	q := `SELECT ` + eventColumns + `, coalesce(actor, ''), coalesce(tenant, ''), coalesce(correlation_id, '') FROM events`
	var args []any
	if streamID != "" {
		q += ` WHERE stream_id = $1`
		args = append(args, streamID)
	}
	q += ` ORDER BY stream_id, version`
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return VerifyReport{}, fmt.Errorf("verify: %w", err)
	}
	defer rows.Close()
	var rep VerifyReport
	var chain Chain
	var e RecordedEvent
	var sv int32
	for rows.Next() {
		var cmd string
		var copies [3]string
		if err := rows.Scan(&e.Position, &e.TxID, &e.StreamID, &e.StreamType, &e.Version, &e.Type, &sv,
			&e.Payload, &e.RawMetadata, &cmd, &e.RecordedAt, &e.PrevHash, &e.Hash,
			&copies[0], &copies[1], &copies[2]); err != nil {
			return VerifyReport{}, fmt.Errorf("verify: %w", err)
		}
		e.SchemaVersion, e.CommandID = int(sv), cmd
		if e.StreamID != chain.stream {
			rep.Streams++
		}
		rep.Events++
		b := chain.Next(e)
		if b == nil && !chain.broken {
			b = checkCopies(&chain, e, copies)
		}
		if b != nil {
			rep.Breaks = append(rep.Breaks, *b)
		}
	}
	if err := rows.Err(); err != nil {
		return VerifyReport{}, fmt.Errorf("verify: %w", err)
	}
	rows.Close()
	broken := map[string]bool{}
	for _, b := range rep.Breaks {
		broken[b.StreamID] = true
	}
	removed, err := s.checkRemovals(ctx, streamID, &rep)
	if err != nil {
		return VerifyReport{}, err
	}
	for _, b := range removed {
		if b.StreamID == "" || !broken[b.StreamID] { // one break per stream: the walk's first
			rep.Breaks = append(rep.Breaks, b)
		}
	}
	slices.SortFunc(rep.Breaks, func(a, b ChainBreak) int { return cmp.Compare(a.Position, b.Position) })
	return rep, nil
}

// checkCopies compares the indexed copies of metadata fields with the hashed
// metadata: altering only a copy would hide an event from filtered queries
// without touching the chain.
func checkCopies(c *Chain, e RecordedEvent, copies [3]string) *ChainBreak {
	var md Metadata
	if err := json.Unmarshal(e.RawMetadata, &md); err != nil {
		c.broken = true
		return &ChainBreak{StreamID: e.StreamID, Version: e.Version, Position: e.Position, Reason: "its metadata is not valid JSON"}
	}
	if md.Actor != copies[0] || md.Tenant != copies[1] || md.CorrelationID != copies[2] {
		c.broken = true
		return &ChainBreak{StreamID: e.StreamID, Version: e.Version, Position: e.Position,
			Reason: "its actor, tenant or correlation id columns differ from its metadata: the event was altered"}
	}
	return nil
}
