package auth

import (
	"testing"

	"cairn/eventstore"
)

func TestRevocationOf(t *testing.T) {
	t.Parallel()
	ada := Principal{Kind: KindUser, ID: "u1", UserID: "u1", TokenID: "t1", TenantID: "acme"}
	agent := Principal{Kind: KindAgent, ID: "n1", TokenID: "node.n1", NodeID: "n1"}
	tests := []struct {
		stream, streamType string
		stops              []Principal
		spares             []Principal
	}{
		{"api_token-t1", "api_token", []Principal{ada}, []Principal{agent}},
		{"user-u1", "user", []Principal{ada}, []Principal{agent}},
		{"tenant-acme", "tenant", []Principal{ada}, []Principal{agent}},
		{"node_credential-n1", "node_credential", []Principal{agent}, []Principal{ada}},
		{"tenant-other", "tenant", nil, []Principal{ada, agent}},
	}
	for _, tt := range tests {
		rev, ok := revocationOf(eventstore.RecordedEvent{StreamID: tt.stream, StreamType: tt.streamType})
		if !ok {
			t.Fatalf("%s: no revocation", tt.stream)
		}
		for _, p := range tt.stops {
			if !rev.Matches(p) {
				t.Errorf("%s does not stop %s", tt.stream, p.TokenID)
			}
		}
		for _, p := range tt.spares {
			if rev.Matches(p) {
				t.Errorf("%s stops %s", tt.stream, p.TokenID)
			}
		}
	}
}
