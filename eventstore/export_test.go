package eventstore

import "context"

// ScanEvents lets the external tests compare scanEvents' two paths.
var ScanEvents = scanEvents

// WireFormatsExpected says whether rows would take the direct path.
var WireFormatsExpected = wireFormatsExpected

// EventColumns is what the reads of whole events select.
const EventColumns = eventColumns

// ReadAllQuery is ReadAll's statement and its arguments.
func (s *Store) ReadAllQuery(after Cursor, limit int, f Filter) (string, []any) {
	return s.readAllQuery(after, limit, f)
}

// TailReadsKept is how many reads of the log the store keeps for
// subscriptions to share.
func (s *Store) TailReadsKept() int {
	s.tail.mu.Lock()
	defer s.tail.mu.Unlock()
	return len(s.tail.events)
}

// ReadLinks is readLinks, with the links gathered.
func (s *Store) ReadLinks(ctx context.Context, from, to Cursor, pageSize int) ([]StreamHead, []string, error) {
	var heads []StreamHead
	var streams []string
	err := s.readLinks(ctx, from, to, pageSize, func(stream string, version int64, hash []byte) {
		streams, heads = append(streams, stream), append(heads, StreamHead{Version: version, Hash: hash})
	})
	return heads, streams, err
}
