package graph_test

import (
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"cairn/graph"
	"cairn/graph/hostile"
)

// heapInUse is the heap in use after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// sendHostile sends one request of the corpus, asking for accept when it is
// set, and returns the response and up to 1 MiB of its body.
func sendHostile(t *testing.T, e *env, h hostile.Request, accept string) (*http.Response, []byte) {
	t.Helper()
	// The corpus names its callers by the tokens of the test's server.
	req, err := h.NewRequest(ctxT(t), e.url+"/graphql", h.Token)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", h.Name, err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	return resp, body
}

// Every hostile request gets its status and code before anything runs (an
// exponential walk would not finish within the test's time), and the server answers ordinary requests afterwards.
func TestHostileRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graph.Config{})
	heapBefore := heapInUse()
	for _, h := range hostile.Corpus() {
		resp, body := sendHostile(t, e, h, "")
		var out struct {
			Errors []struct {
				Message    string         `json:"message"`
				Extensions map[string]any `json:"extensions"`
			} `json:"errors"`
			Data *json.RawMessage `json:"data"`
		}
		_ = json.Unmarshal(body, &out)
		switch {
		case resp.StatusCode != h.Status:
			t.Errorf("%s: HTTP %d, want %d: %.300s", h.Name, resp.StatusCode, h.Status, body)
		case len(out.Errors) == 0 || out.Errors[0].Extensions["code"] != h.Code:
			t.Errorf("%s: errors %.300s, want code %s", h.Name, body, h.Code)
		case h.NoData && strings.Contains(string(body), `"data"`):
			t.Errorf("%s: a data key although nothing ran: %.300s", h.Name, body)
		case strings.TrimSpace(out.Errors[0].Message) == "":
			t.Errorf("%s: no message", h.Name)
		case len(out.Errors[0].Message) > 500:
			t.Errorf("%s: a message of %d bytes (the request echoed?)", h.Name, len(out.Errors[0].Message))
		}
	}
	// Nothing the corpus sent is held on to (the server runs in this
	// process: its heap is the test's).
	if grew := int64(heapInUse()) - int64(heapBefore); grew > 128<<20 {
		t.Errorf("the heap grew by %d MiB over the corpus", grew>>20)
	}
	// Still serving.
	var v struct{ Viewer struct{ Role string } }
	if err := e.client("admin").Do(ctxT(t), `{ viewer { role } }`, nil, &v); err != nil || v.Viewer.Role != "ADMIN" {
		t.Fatalf("after the corpus: %+v %v", v, err)
	}
}

// The hostile corpus sent over server-sent events gets the same status and
// code: refused before the stream with a 4xx, or, when the request is a
// GraphQL request that fails to parse or validate, a stream whose one
// result carries the error, then its end.
func TestHostileRequestsAsEventStreams(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graph.Config{})
	for _, h := range hostile.Corpus() {
		if h.Method != "" && h.Method != http.MethodPost {
			continue // event streams are POSTed
		}
		resp, body := sendHostile(t, e, h, "text/event-stream")
		answer := body
		if resp.Header.Get("Content-Type") == "text/event-stream" {
			// The result is the data line of the stream's first event.
			answer = nil
			for line := range strings.SplitSeq(string(body), "\n") {
				if d, ok := strings.CutPrefix(line, "data: "); ok {
					answer = []byte(d)
					break
				}
			}
			if !strings.HasSuffix(string(body), "event: complete\n\n") {
				t.Errorf("%s: the stream did not end with complete: %.300s", h.Name, body)
			}
		}
		var out struct {
			Errors []struct {
				Extensions map[string]any `json:"extensions"`
			} `json:"errors"`
		}
		_ = json.Unmarshal(answer, &out)
		switch {
		case resp.StatusCode != h.Status:
			t.Errorf("%s: HTTP %d, want %d: %.300s", h.Name, resp.StatusCode, h.Status, body)
		case len(out.Errors) == 0 || out.Errors[0].Extensions["code"] != h.Code:
			t.Errorf("%s: %.300s, want code %s", h.Name, body, h.Code)
		}
	}
}
