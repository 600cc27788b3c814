package client

import (
	"encoding/json"
	"reflect"
	"testing"
)

// A result decodes the same through the one-pass path as generally.
func TestDecodeResultMatchesUnmarshal(t *testing.T) {
	t.Parallel()
	tests := []string{
		`{"data":{"events":{"cursor":"1:2","type":"tenant.created"}}}`,
		`{"data":null}`,
		`{"data":{"a":[1,2,{"b":"}"}]} }`,
		`{"data":{"a":1},"errors":[{"message":"slow subscriber"}]}`,
		`{"data":{"a":1},"extensions":{"x":1}}`,
		`{"errors":[{"message":"no"}],"data":null}`,
		`{"data":{"a":1}}}`,
		`{"data":{"a":}`,
		`{"data":1,"data":2}`,
	}
	for _, in := range tests {
		t.Run(in, func(t *testing.T) {
			t.Parallel()
			var want Response
			wantErr := json.Unmarshal([]byte(in), &want)
			got, err := decodeResult([]byte(in))
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("error %v, want %v", err, wantErr)
			}
			if err != nil {
				return
			}
			if !reflect.DeepEqual(*got, want) {
				t.Fatalf("got %+v, want %+v", *got, want)
			}
		})
	}
}
