package eventstore

import (
	"context"
	"fmt"
)

// ReadStreams returns the events of several streams in one query, each
// stream's in version order, keyed by stream id. A stream without events is
// absent from the map. It serves readers that need many small streams at
// once (the API's job loader) without a query per stream.
func (s *Store) ReadStreams(ctx context.Context, streamIDs []string) (map[string][]RecordedEvent, error) {
	out := make(map[string][]RecordedEvent, len(streamIDs))
	if len(streamIDs) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT `+eventColumns+` FROM events WHERE stream_id = ANY($1) ORDER BY stream_id, version`, streamIDs)
	if err != nil {
		return nil, fmt.Errorf("read %d streams: %w", len(streamIDs), err)
	}
	evs, err := scanEvents(rows, 8*len(streamIDs))
	if err != nil {
		return nil, fmt.Errorf("read %d streams: %w", len(streamIDs), err)
	}
	for _, e := range evs {
		out[e.StreamID] = append(out[e.StreamID], e)
	}
	return out, nil
}
