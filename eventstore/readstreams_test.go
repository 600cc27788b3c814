package eventstore_test

import (
	"testing"

	"cairn/eventstore"
)

// ReadStreams reads several streams with one query, each in version order;
// a stream without events is absent.
func TestReadStreams(t *testing.T) {
	t.Parallel()
	e := newEnv(t, eventstore.Options{})
	c := ctx(t)
	for i := 1; i <= 3; i++ {
		for _, id := range []string{"w-many-a", "w-many-b"} {
			if _, err := e.store.Append(c, one(id, eventstore.Exactly(int64(i-1)), widgetCounted{N: i})); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := e.store.ReadStreams(c, []string{"w-many-b", "w-many-none", "w-many-a"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got["w-many-none"]; ok || len(got) != 2 {
		t.Fatalf("streams %v, want w-many-a and w-many-b", len(got))
	}
	for _, id := range []string{"w-many-a", "w-many-b"} {
		evs := got[id]
		if len(evs) != 3 {
			t.Fatalf("%s: %d events, want 3", id, len(evs))
		}
		for i, ev := range evs {
			d, err := e.store.Decode(ev)
			if err != nil {
				t.Fatal(err)
			}
			if ev.StreamID != id || ev.Version != int64(i+1) || d.(widgetCounted).N != i+1 {
				t.Fatalf("%s: event %d is %s v%d %+v", id, i, ev.StreamID, ev.Version, d)
			}
		}
	}
	if got, err := e.store.ReadStreams(c, nil); err != nil || len(got) != 0 {
		t.Fatalf("no streams: %v %v", got, err)
	}
}
