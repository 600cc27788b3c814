package dispatch

import (
	"errors"
	"fmt"

	"cairn/domain"
)

// ErrStopped ends feeds when the dispatcher stops; the agent reconnects.
var ErrStopped = errors.New("the control plane is stopping; reconnect and resume from the last cursor")

// ErrStreamClosed is what Next returns after Close.
var ErrStreamClosed = errors.New("the job feed was closed")

// SlowConsumerError ends a subscription whose agent fell too far behind. Its
// leases are not lost: subscribing again from the last cursor received
// delivers them.
type SlowConsumerError struct {
	Behind int
}

func (e *SlowConsumerError) Error() string {
	return fmt.Sprintf("the agent fell %d jobs behind its feed; subscribe again from the last cursor received", e.Behind)
}

// Is makes errors.Is(err, domain.ErrConflict) true.
func (e *SlowConsumerError) Is(target error) bool { return target == domain.ErrConflict }

// NodeGoneError refuses an agent whose node was decommissioned.
type NodeGoneError struct {
	NodeID string
	Status string
}

func (e *NodeGoneError) Error() string {
	return fmt.Sprintf("node %q is %s: its agent takes no jobs; enroll the machine again with a new join token", e.NodeID, e.Status)
}

// Is makes errors.Is(err, domain.ErrConflict) true.
func (e *NodeGoneError) Is(target error) bool { return target == domain.ErrConflict }
