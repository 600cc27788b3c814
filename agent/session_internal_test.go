package agent

import (
	"testing"
	"time"
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
