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

// presenceRefresh is how old this replica's word that an agent is
// connected to it may grow before it is written again: about every other
// round, so it is never older than presenceWindow allows. Written every
// round, the 10,000 rows of a replica's agents were a twentieth of the
// database's work in a fan-out to all of them.
func (d *Dispatcher) presenceRefresh() time.Duration { return d.opts.HeartbeatInterval * 3 / 4 }

func (d *Dispatcher) exchangePresence(ctx context.Context) {
	d.mu.Lock()
	now := d.now()
	var here []string
	for id, n := range d.nodes {
		switch {
		case !n.n.Exists() || !d.presentHere(n, now):
			n.presencePublished = time.Time{} // written again as soon as it is back
		case now.Sub(n.presencePublished) >= d.presenceRefresh():
			n.presencePublished = now
			here = append(here, id)
		}
	}
	d.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, d.opts.HeartbeatInterval/2)
	defer cancel()
	if err := d.presence.Publish(ctx, here); err != nil {
		d.mu.Lock()
		for _, id := range here {
			if n := d.nodes[id]; n != nil {
				n.presencePublished = time.Time{} // written at the next round
			}
		}
		d.mu.Unlock()
		if ctx.Err() == nil {
			d.log.Warn().Err(err).Msg("could not publish which agents are connected here")
		}
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
