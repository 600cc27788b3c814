package dispatch

import (
	"testing"

	"cairn/domain"
	"cairn/eventstore"
)

// Events of a job applied already up to their version (a fan-out's
// children, which the dispatcher applies as it appends them) are not
// decoded again when the subscription brings them back; the rest are.
func TestAppliedEventsAreNotDecodedAgain(t *testing.T) {
	t.Parallel()
	d := &Dispatcher{jobs: map[string]*jobEntry{"child-1": {version: 2}}}
	cases := []struct {
		name string
		rec  eventstore.RecordedEvent
		want bool
	}{
		{"submitted, applied", eventstore.RecordedEvent{StreamType: domain.JobStream, StreamID: domain.StreamID(domain.JobStream, "child-1"), Version: 1}, true},
		{"leased, applied", eventstore.RecordedEvent{StreamType: domain.JobStream, StreamID: domain.StreamID(domain.JobStream, "child-1"), Version: 2}, true},
		{"started, new", eventstore.RecordedEvent{StreamType: domain.JobStream, StreamID: domain.StreamID(domain.JobStream, "child-1"), Version: 3}, false},
		{"another job", eventstore.RecordedEvent{StreamType: domain.JobStream, StreamID: domain.StreamID(domain.JobStream, "child-2"), Version: 1}, false},
		{"a node", eventstore.RecordedEvent{StreamType: domain.NodeStream, StreamID: domain.StreamID(domain.NodeStream, "child-1"), Version: 1}, false},
	}
	for _, tc := range cases {
		if got := d.appliedAlready(tc.rec); got != tc.want {
			t.Errorf("%s: applied already %v, want %v", tc.name, got, tc.want)
		}
	}
	// With no store to decode with, applying the applied ones must not
	// reach for it.
	d.applyBatch([]eventstore.RecordedEvent{cases[0].rec, cases[1].rec})
}
