package agent

import (
	"cairn/graph/client"
	"context"
	"errors"
	"fmt"
	"time"
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
// for dead: the control plane pings every 15 seconds, or up to every 30
// when it serves very many connections.
const wsIdle = 60 * time.Second

type wsFeed struct {
	c      *client.Client
	nodeID string
	// carry, when set, is given the subscription once connected, for the
	// session's other operations, and returns what ends that.
	carry func(*client.Subscription) (stop func())
}

func (f *wsFeed) name() string { return "websocket" }

func (f *wsFeed) run(ctx context.Context, after string, connected func(), deliver func(Lease) error) error {
	vars := map[string]any{"nodeId": f.nodeID}
	if after != "" {
		vars["after"] = after
	}
	sub, err := f.c.WithIdleTimeout(wsIdle).Subscribe(ctx, client.TransportWS,
		client.Request{Query: opAgentJobs, OperationName: "AgentJobs", Variables: vars})
	if err != nil {
		return err
	}
	defer sub.Close()
	if f.carry != nil {
		defer f.carry(sub)()
	}
	connected()
	for {
		resp, err := sub.Next(ctx)
		switch {
		case errors.Is(err, client.ErrComplete):
			return errors.New("the control plane ended the subscription")
		case err != nil:
			return err
		case len(resp.Errors) > 0:
			return resp.Errors
		}
		var l Lease
		if err := resp.Field(&l); err != nil {
			return fmt.Errorf("decode a lease: %w", err)
		}
		if err := deliver(l); err != nil {
			return err
		}
	}
}

// pollFeed long-polls pollAgentJobs over plain HTTP.
type pollFeed struct {
	c      *client.Client
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
		if err := send(ctx, f.c, "Poll", map[string]any{"input": input}, &out); err != nil {
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
