package graph

import (
	"testing"

	"cairn/eventstore"
)

func TestVerifyChainCostGrowsWithTheLog(t *testing.T) {
	t.Parallel()
	stream := "node-a"
	for _, tt := range []struct {
		head     int64
		streamID *string
		want     int
	}{
		{head: 0, want: 1},
		{head: 999, want: 1},
		{head: 5_000_000, want: 5001},
		{head: 5_000_000, streamID: &stream, want: streamVerifyCost},
		{head: 1 << 62, want: 1 + 1<<30},
	} {
		if got := verifyChainCost(eventstore.Cursor{Position: tt.head}, tt.streamID); got != tt.want {
			t.Errorf("head %d, stream %v: cost %d, want %d", tt.head, tt.streamID, got, tt.want)
		}
	}
}
