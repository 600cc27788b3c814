package eventstore

import (
	"slices"
	"testing"
)

// run is events at positions from+1 to to of one transaction each, with a
// payload of size bytes.
func run(from, to int64, size int) []RecordedEvent {
	var evs []RecordedEvent
	for p := from + 1; p <= to; p++ {
		evs = append(evs, RecordedEvent{TxID: uint64(p), Position: p, Payload: make([]byte, size)})
	}
	return evs
}

func at(p int64) Cursor { return Cursor{TxID: uint64(p), Position: p} }

func positions(evs []RecordedEvent) []int64 {
	var ps []int64
	for _, e := range evs {
		ps = append(ps, e.Position)
	}
	return ps
}

func TestRecentEventsKeepOneRunOfTheLog(t *testing.T) {
	t.Parallel()
	type read struct {
		after, to int64 // events after..to were read
		limit     int
	}
	tests := []struct {
		name       string
		max, bytes int
		reads      []read
		// what the window then holds: the cursor before it and its events
		from, last int64
	}{
		{"a read at the head starts it", 10, 1 << 20, []read{{5, 8, 100}}, 5, 8},
		{"a read from its end extends it", 10, 1 << 20, []read{{5, 8, 100}, {8, 10, 100}}, 5, 10},
		{"a full read from its end extends it", 10, 1 << 20, []read{{5, 8, 100}, {8, 10, 2}}, 5, 10},
		{"a read before it changes nothing", 10, 1 << 20, []read{{5, 8, 100}, {1, 3, 100}}, 5, 8},
		{"a read inside it changes nothing", 10, 1 << 20, []read{{5, 8, 100}, {6, 9, 100}}, 5, 8},
		{"a read at the head past it starts again", 10, 1 << 20, []read{{5, 8, 100}, {20, 22, 100}}, 20, 22},
		{"a full read past it, far behind the head, does not", 10, 1 << 20, []read{{5, 8, 100}, {20, 22, 2}}, 5, 8},
		{"a full read does not start an empty one", 10, 1 << 20, []read{{5, 8, 3}}, 0, 0},
		{"the oldest go past the count", 4, 1 << 20, []read{{0, 3, 100}, {3, 6, 100}}, 2, 6},
		{"a read larger than the window keeps its last", 4, 1 << 20, []read{{0, 9, 100}}, 5, 9},
		{"the oldest go past the bytes", 100, 3 * 10, []read{{0, 2, 100}, {2, 4, 100}}, 1, 4},
		{"one event larger than the bytes is kept alone", 100, 5, []read{{0, 3, 100}}, 2, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newRecentEvents(tt.max, tt.bytes)
			for _, r := range tt.reads {
				w.add(at(r.after), run(r.after, r.to, 10), r.limit)
			}
			got, ok := w.after(at(tt.from), 1000)
			if tt.last == 0 {
				if ok {
					t.Fatalf("the window holds %v, want it empty", positions(got))
				}
				return
			}
			if !ok {
				t.Fatalf("the window does not hold %d", tt.from)
			}
			if want := positions(run(tt.from, tt.last, 0)); !slices.Equal(positions(got), want) {
				t.Errorf("after %d the window holds %v, want %v", tt.from, positions(got), want)
			}
			if tt.from > 0 {
				if got, ok := w.after(at(tt.from-1), 1000); ok {
					t.Errorf("the window holds %v after %d, before its start", positions(got), tt.from-1)
				}
			}
		})
	}
}

func TestRecentEventsServeFromAnyEventInside(t *testing.T) {
	t.Parallel()
	w := newRecentEvents(100, 1<<20)
	w.add(at(10), run(10, 20, 1), 50)
	tests := []struct {
		name   string
		after  int64
		limit  int
		want   []int64
		inside bool
	}{
		{"from the start", 10, 3, []int64{11, 12, 13}, true},
		{"from an event", 15, 100, []int64{16, 17, 18, 19, 20}, true},
		{"from the last event: nothing kept after it", 20, 100, nil, true},
		{"before the start", 9, 100, nil, false},
		{"past the end", 21, 100, nil, false},
		{"between two events", 0, 100, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := at(tt.after)
			if tt.after == 0 {
				c = Cursor{TxID: 15, Position: 99} // no event of the window
			}
			got, ok := w.after(c, tt.limit)
			if ok != tt.inside || !slices.Equal(positions(got), tt.want) {
				t.Errorf("after(%s, %d) = %v, %v; want %v, %v", c, tt.limit, positions(got), ok, tt.want, tt.inside)
			}
		})
	}
}

// What a reader was given never changes: the window appends past it and
// moves to a new array to drop the oldest.
func TestRecentEventsNeverChangeWhatAReaderHolds(t *testing.T) {
	t.Parallel()
	w := newRecentEvents(8, 1<<20)
	w.add(at(0), run(0, 4, 1), 100)
	held, _ := w.after(at(0), 100)
	want := positions(held)
	for p := int64(4); p < 40; p += 3 {
		w.add(at(p), run(p, p+3, 1), 100)
		if got := positions(held); !slices.Equal(got, want) {
			t.Fatalf("after adding %d..%d a reader's events read %v, were %v", p+1, p+3, got, want)
		}
		// A reader's slice has no room to append into the window's array.
		if cap(held) != len(held) {
			t.Fatalf("a reader's slice has room past its events: len %d, cap %d", len(held), cap(held))
		}
		held, _ = w.after(at(p), 100)
		want = positions(held)
	}
}
