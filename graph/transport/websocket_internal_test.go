package transport

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// TestAppendResponseMatchesMarshal: the hand-built result is the JSON that
// marshalling the response gives.
func TestAppendResponseMatchesMarshal(t *testing.T) {
	t.Parallel()
	yes := true
	tests := []struct {
		name string
		resp *graphql.Response
	}{
		{"data", &graphql.Response{Data: json.RawMessage(`{"events":{"cursor":"1:2","type":"tenant.created"}}`)}},
		{"no data", &graphql.Response{}},
		{"errors", &graphql.Response{Errors: gqlerror.List{{Message: "slow subscriber"}}, Data: json.RawMessage(`null`)}},
		{"extensions", &graphql.Response{Data: json.RawMessage(`{}`), Extensions: map[string]any{"cursor": "1:2"}}},
		{"empty extensions", &graphql.Response{Data: json.RawMessage(`{"events":{}}`), Extensions: map[string]any{}}},
		{"incremental", &graphql.Response{Data: json.RawMessage(`{}`), Label: "l", HasNext: &yes}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := appendResponse([]byte("x"), tt.resp)
			if err != nil {
				t.Fatal(err)
			}
			if got[0] != 'x' {
				t.Fatalf("did not append: %s", got)
			}
			want, err := json.Marshal(tt.resp)
			if err != nil {
				t.Fatal(err)
			}
			var g, w any
			if err := json.Unmarshal(got[1:], &g); err != nil {
				t.Fatalf("%s is not JSON: %v", got[1:], err)
			}
			if err := json.Unmarshal(want, &w); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("appended %s, marshalled %s", got[1:], want)
			}
		})
	}
}

// The keep-alive stretches with the connections open so that the server
// sends at most maxKeepAlivesPerSecond pings, and never past twice the
// configured interval, which peers count on.
func TestKeepAliveInterval(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		open int64
		want time.Duration
	}{
		{0, 15 * time.Second},
		{7_500, 15 * time.Second},
		{10_000, 20 * time.Second},
		{15_000, 30 * time.Second},
		{100_000, 30 * time.Second},
	} {
		h := &Handler{opts: Options{KeepAlive: 15 * time.Second}}
		h.wsOpen.Store(c.open)
		if got := h.keepAliveInterval(); got != c.want {
			t.Errorf("%d connections: every %s, want %s", c.open, got, c.want)
		}
	}
}
