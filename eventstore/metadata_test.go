package eventstore

import (
	"encoding/json"
	"testing"
)

// The direct reading of metadata gives what encoding/json gives, and what it
// cannot read it leaves to encoding/json.
func TestDecodeMetadataMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   string
		flat bool // read directly
	}{
		{"as append writes it", `{"commandId":"c1","correlationId":"k","causationId":"x","actor":"alice","tenant":"acme","commandFingerprint":"ab12"}`, true},
		{"some fields", `{"actor":"dispatcher"}`, true},
		{"empty", `{}`, true},
		{"spaces", ` { "actor" : "a" , "tenant":"t" } `, true},
		{"unicode", `{"actor":"zoë 日本"}`, true},
		{"escaped quote", `{"actor":"a\"b"}`, false},
		{"escaped unicode", `{"actor":"\u00e9"}`, false},
		{"extra", `{"actor":"a","extra":{"k":"v"}}`, false},
		{"unknown key", `{"actor":"a","other":"x"}`, false},
		{"duplicate key", `{"actor":"a","actor":"b"}`, true},
		{"null", `null`, false},
		{"number value", `{"actor":1}`, false},
		{"trailing comma", `{"actor":"a",}`, false},
		{"control character", "{\"actor\":\"a\tb\"}", false},
		{"not closed", `{"actor":"a"`, false},
		{"not JSON whitespace", "{\v}", false},
		{"not UTF-8", "{\"actor\":\"\xff\"}", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var direct Metadata
			if got := decodeFlatMetadata(c.in, &direct); got != c.flat {
				t.Fatalf("read directly: %v, want %v", got, c.flat)
			}
			var want Metadata
			wantErr := json.Unmarshal([]byte(c.in), &want)
			var got Metadata
			gotErr := decodeMetadata(c.in, &got)
			if (gotErr == nil) != (wantErr == nil) {
				t.Fatalf("error %v, encoding/json's %v", gotErr, wantErr)
			}
			if wantErr == nil && !equalMetadata(got, want) {
				t.Fatalf("decoded %+v, encoding/json %+v", got, want)
			}
		})
	}
}

func equalMetadata(a, b Metadata) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func FuzzDecodeMetadata(f *testing.F) {
	f.Add(`{"actor":"a","tenant":"t"}`)
	f.Add(`{"commandId":"c","extra":{"k":"v"}}`)
	f.Fuzz(func(t *testing.T, in string) {
		var got, want Metadata
		gotErr := decodeMetadata(in, &got)
		wantErr := json.Unmarshal([]byte(in), &want)
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("%q: error %v, encoding/json's %v", in, gotErr, wantErr)
		}
		if wantErr == nil && !equalMetadata(got, want) {
			t.Fatalf("%q: decoded %+v, encoding/json %+v", in, got, want)
		}
	})
}
