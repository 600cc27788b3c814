package transport

import (
	"github.com/99designs/gqlgen/graphql"

	"cairn/eventstore"
	"cairn/internal/wsframe"
)

// keptRuns keeps the recent runs of kept results as a transport wrote them:
// the subscriptions of one operation and caller that follow the log are
// handed the same run of results at each of the hub's publishes, and the
// first to write it frames it for the others, which write the same bytes.
// Framed result by result, each subscription's share of a flood with two
// hundred subscribers was most of what it cost the server.
type keptRuns struct{ runs *recentMap[runKey, []byte] }

// runKey names a run of results: the operation and caller (answerKey),
// how the transport frames them, and the events they are of.
type runKey struct {
	op          [32]byte
	framing     runFraming
	first, last eventstore.Cursor
	n           int
}

// runFraming is how a run's results are framed: as server-sent events (the
// zero value), or as WebSocket messages of the operation id.
type runFraming struct {
	webSocket bool
	id        string
}

// keptRunsKept is how many runs are kept: a second or two of a paced
// hub's publishes for a few operations and transports (the subscriptions
// of a run write it within moments of each other).
const keptRunsKept = 128

// maxKeptRun bounds the bytes of one kept run, so that the runs kept hold
// 4 MiB at most; a longer one is framed by each subscription for itself.
const maxKeptRun = corkLimit

func newKeptRuns(size int) *keptRuns {
	return &keptRuns{runs: newRecentMap[runKey, []byte](size)}
}

// framed returns run framed by frame, the bytes kept for it under framing
// when another subscription framed it already. The bytes are shared: the
// caller writes them and changes nothing in them.
func (r *keptRuns) framed(op [32]byte, framing runFraming, run []pushed, frame func([]byte, []pushed) []byte) []byte {
	key := runKey{op: op, framing: framing, first: run[0].event, last: run[len(run)-1].event, n: len(run)}
	if b, ok := r.runs.Get(key); ok {
		return b
	}
	b := frame(nil, run)
	if len(b) > maxKeptRun {
		return b
	}
	return r.runs.Add(key, b)
}

// Len is how many runs are kept.
func (r *keptRuns) Len() int { return r.runs.Len() }

// appendEventsNext appends kept results as server-sent events, as
// sseStream.next writes each.
func appendEventsNext(b []byte, run []pushed) []byte {
	var resp graphql.Response
	for _, it := range run {
		resp.Data = it.data
		b = appendEvent(b, &resp)
	}
	return b
}

// appendFramesNext appends kept results as WebSocket "next" messages of
// the operation quotedID, as wsConnection.sendNext frames each.
func appendFramesNext(b, quotedID []byte, run []pushed) []byte {
	const (
		head = `{"id":`
		mid  = `,"type":"next","payload":{"data":`
		tail = `}}`
	)
	for _, it := range run {
		data := []byte(it.data)
		if len(data) == 0 {
			data = []byte("null")
		}
		b = wsframe.AppendHeader(b, wsframe.Text, len(head)+len(quotedID)+len(mid)+len(data)+len(tail), nil)
		b = append(b, head...)
		b = append(b, quotedID...)
		b = append(b, mid...)
		b = append(b, data...)
		b = append(b, tail...)
	}
	return b
}
