package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"cairn/graph/client"
)

// TestHeartbeatWaitSpreads: the second heartbeat lands anywhere in the
// first interval, later ones within a tenth of the interval either side,
// never later than that (the control plane counts missed intervals).
func TestHeartbeatWaitSpreads(t *testing.T) {
	t.Parallel()
	const every = 50 * time.Second
	var early, late bool
	for range 2000 {
		w := heartbeatWait(every, true)
		if w <= 0 || w > every {
			t.Fatalf("second heartbeat after %s, want within (0, %s]", w, every)
		}
		early = early || w < every/4
		late = late || w > every*3/4
		w = heartbeatWait(every, false)
		if w < every*9/10 || w > every*11/10 {
			t.Fatalf("heartbeat after %s, want within a tenth of %s", w, every)
		}
	}
	if !early || !late {
		t.Errorf("2,000 second heartbeats did not spread over the interval (early %v, late %v)", early, late)
	}
	if heartbeatWait(0, true) != 0 || heartbeatWait(0, false) != 0 {
		t.Error("a zero interval must not panic or wait")
	}
}

// TestReportSaysWhenItKeepsFailing: a report the control plane keeps
// refusing for a passing trouble is retried until it is stored, and said at
// warn level the third time and every tenth after, naming the job and the
// operation; the tries between stay at debug level.
func TestReportSaysWhenItKeepsFailing(t *testing.T) {
	t.Parallel()
	const failures = 13
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if calls.Add(1) <= failures {
			_, _ = io.WriteString(w, `{"errors":[{"message":"the database cannot be reached","extensions":{"code":"UNAVAILABLE"}}]}`)
			return
		}
		_, _ = io.WriteString(w, `{"data":{"finishJob":{"ok":true}}}`)
	}))
	defer srv.Close()
	var logged bytes.Buffer
	s := &Session{c: client.New(srv.URL, "", nil), nodeID: "n1", minBack: time.Millisecond, maxBack: 2 * time.Millisecond,
		log: zerolog.New(&logged).Level(zerolog.InfoLevel)}
	if err := s.Report(context.Background(), "Finish", map[string]any{"nodeId": "n1", "jobId": "j1"}); err != nil {
		t.Fatalf("report: %v", err)
	}
	if n := calls.Load(); n != failures+1 {
		t.Fatalf("%d requests, want %d", n, failures+1)
	}
	var tries []int
	for _, line := range strings.Split(strings.TrimSpace(logged.String()), "\n") {
		var entry struct {
			Level, Job, Op string
			Tries          int
		}
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if entry.Level != "warn" || entry.Job != "j1" || entry.Op != "Finish" {
			t.Errorf("log line %s: want a warning naming job j1 and Finish", line)
		}
		tries = append(tries, entry.Tries)
	}
	if !slices.Equal(tries, []int{3, 13}) {
		t.Errorf("warned at tries %v, want [3 13]:\n%s", tries, logged.String())
	}
}
