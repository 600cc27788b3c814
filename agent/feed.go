package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
)

// A feed brings the leases of the agent's node: a GraphQL subscription over
// WebSocket, or long polls over plain HTTP where WebSockets are blocked. Both
// resume after the cursor of the last lease received, so a reconnect misses
// nothing and repeats nothing.
type feed interface {
	// run delivers leases after cursor after until the connection ends or
	// deliver fails. connected is called once the feed is established.
	run(ctx context.Context, after string, connected func(), deliver func(Lease) error) error
	name() string
}

// wsIdle is how long a WebSocket may stay silent before the agent takes it
// for dead: the control plane pings every 15 seconds.
const wsIdle = 60 * time.Second

type wsFeed struct {
	c      *client
	nodeID string
}

func (f *wsFeed) name() string { return "websocket" }

// dialError marks a failure to open the WebSocket at all: the cue to fall
// back to long polling.
type dialError struct{ err error }

func (e *dialError) Error() string { return "open a WebSocket: " + e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

type wsMessage struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

func (f *wsFeed) run(ctx context.Context, after string, connected func(), deliver func(Lease) error) error {
	url := "ws" + strings.TrimPrefix(f.c.endpoint, "http")
	hc := &http.Client{Transport: f.c.http.Transport}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	conn, resp, err := websocket.Dial(dctx, url, &websocket.DialOptions{
		HTTPClient:   hc,
		Subprotocols: []string{"graphql-transport-ws"},
		HTTPHeader:   http.Header{"Authorization": {"Bearer " + f.c.token}},
	})
	cancel()
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusUnauthorized {
			return &APIError{Code: "UNAUTHENTICATED", Message: "the control plane refused the node credential"}
		}
		return &dialError{err}
	}
	defer conn.CloseNow()
	conn.SetReadLimit(16 << 20)
	if conn.Subprotocol() != "graphql-transport-ws" {
		return &dialError{fmt.Errorf("the server speaks %q, not graphql-transport-ws", conn.Subprotocol())}
	}

	init, _ := json.Marshal(map[string]string{"authorization": "Bearer " + f.c.token})
	if err := f.write(ctx, conn, wsMessage{Type: "connection_init", Payload: init}); err != nil {
		return err
	}
	if m, err := f.read(ctx, conn); err != nil {
		return err
	} else if m.Type != "connection_ack" {
		return fmt.Errorf("the control plane answered %q to connection_init", m.Type)
	}
	vars := map[string]any{"nodeId": f.nodeID}
	if after != "" {
		vars["after"] = after
	}
	sub, _ := json.Marshal(gqlRequest{Query: opAgentJobs, OperationName: "AgentJobs", Variables: vars})
	if err := f.write(ctx, conn, wsMessage{ID: "1", Type: "subscribe", Payload: sub}); err != nil {
		return err
	}
	connected()
	for {
		m, err := f.read(ctx, conn)
		if err != nil {
			return err
		}
		switch m.Type {
		case "ping":
			if err := f.write(ctx, conn, wsMessage{Type: "pong"}); err != nil {
				return err
			}
		case "next":
			var r gqlResponse
			if err := json.Unmarshal(m.Payload, &r); err != nil {
				return fmt.Errorf("decode a lease: %w", err)
			}
			if len(r.Errors) > 0 {
				return r.Errors[0].apiError()
			}
			var l Lease
			if err := decodeField(r.Data, &l); err != nil {
				return err
			}
			if err := deliver(l); err != nil {
				return err
			}
		case "error":
			var errs []gqlError
			if err := json.Unmarshal(m.Payload, &errs); err == nil && len(errs) > 0 {
				return errs[0].apiError()
			}
			return fmt.Errorf("the subscription failed: %s", m.Payload)
		case "complete":
			return errors.New("the control plane ended the subscription")
		}
	}
}

func (f *wsFeed) write(ctx context.Context, conn *websocket.Conn, m wsMessage) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return wsjson.Write(ctx, conn, m)
}

func (f *wsFeed) read(ctx context.Context, conn *websocket.Conn) (wsMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, wsIdle)
	defer cancel()
	var m wsMessage
	err := wsjson.Read(ctx, conn, &m)
	var ce websocket.CloseError
	if errors.As(err, &ce) && ce.Code == 4401 {
		return m, &APIError{Code: "UNAUTHENTICATED", Message: "the control plane closed the connection: " + ce.Reason}
	}
	return m, err
}

// pollFeed long-polls pollAgentJobs over plain HTTP.
type pollFeed struct {
	c      *client
	nodeID string
	wait   time.Duration
}

func (f *pollFeed) name() string { return "long poll" }

func (f *pollFeed) run(ctx context.Context, after string, connected func(), deliver func(Lease) error) error {
	first := true
	for {
		// The first poll does not wait: it tells at once whether the
		// control plane takes this node's polls.
		wait := int(f.wait / time.Second)
		if first {
			wait = 0
		}
		input := map[string]any{"nodeId": f.nodeID, "waitSeconds": wait}
		if after != "" {
			input["after"] = after
		}
		var out struct {
			Cursor string  `json:"cursor"`
			Jobs   []Lease `json:"jobs"`
		}
		if err := f.c.do(ctx, "Poll", map[string]any{"input": input}, &out); err != nil {
			return err
		}
		if first {
			connected()
			first = false
		}
		for _, l := range out.Jobs {
			if err := deliver(l); err != nil {
				return err
			}
			after = l.Cursor
		}
		if out.Cursor != "" {
			after = out.Cursor
		}
	}
}
