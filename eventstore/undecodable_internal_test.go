package eventstore

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// A reader that skips many events it cannot decode logs the first of each
// type, then how many more once per interval, not a line per event.
func TestUndecodableLogsOncePerTypeThenCounts(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	u := NewUndecodable(zerolog.New(&out), "dispatcher")
	now := time.Unix(0, 0)
	u.now = func() time.Time { return now }
	skip := func(typ string, n int) {
		for i := range n {
			u.Skip(RecordedEvent{Type: typ, StreamID: "node-1", Version: int64(i + 1)}, errors.New("unknown event type "+typ))
		}
	}
	skip("node.renamed_v9", 1000)
	skip("job.paused", 10)
	if lines := strings.Count(out.String(), "\n"); lines != 2 {
		t.Fatalf("%d lines for 1,010 events of two types, want 2:\n%s", lines, out.String())
	}
	now = now.Add(undecodableEvery)
	skip("node.renamed_v9", 1)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[2], `"skipped":1000`) || !strings.Contains(lines[2], `"skipped_in_all":1001`) {
		t.Fatalf("after a minute, want one line counting the 1,000 skipped since the first:\n%s", out.String())
	}
	if !strings.Contains(lines[0], `"type":"node.renamed_v9"`) || !strings.Contains(lines[0], "dispatcher cannot decode") {
		t.Fatalf("the first line does not name the reader and the type: %s", lines[0])
	}
}
