package transport

import (
	"encoding/json"
	"reflect"
	"testing"

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
