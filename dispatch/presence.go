package dispatch

import (
	"context"
	"time"
)

// presenceWindow is how long another replica's word that an agent is
// connected to it counts: replicas publish every half heartbeat interval,
// so two intervals leave room for a late round.
func (d *Dispatcher) presenceWindow() time.Duration { return 2 * d.opts.HeartbeatInterval }

// sharePresence publishes, every half heartbeat interval, the agents
// connected to this replica, and reads where the others are connected, so
// that the owner of the decisions leases to them and never takes them for
// silent.
func (d *Dispatcher) sharePresence(ctx context.Context) {
	t := time.NewTicker(d.opts.HeartbeatInterval / 2)
	defer t.Stop()
	for {
		d.exchangePresence(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (d *Dispatcher) exchangePresence(ctx context.Context) {
	d.mu.Lock()
	now := d.now()
	var here []string
	for id, n := range d.nodes {
		if n.n.Exists() && d.presentHere(n, now) {
			here = append(here, id)
		}
	}
	d.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, d.opts.HeartbeatInterval/2)
	defer cancel()
	if err := d.presence.Publish(ctx, here); err != nil && ctx.Err() == nil {
		d.log.Warn().Err(err).Msg("could not publish which agents are connected here")
	}
	elsewhere, err := d.presence.Elsewhere(ctx, d.presenceWindow())
	if err != nil {
		if ctx.Err() == nil {
			d.log.Warn().Err(err).Msg("could not read which agents are connected to other replicas")
		}
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	now = d.now()
	for id, ago := range elsewhere {
		if n := d.nodes[id]; n != nil {
			n.seenElsewhere = later(n.seenElsewhere, now.Add(-ago))
			d.recheck(n)
		}
	}
}
