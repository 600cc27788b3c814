package client

import (
	"encoding/json"
	"strings"
	"testing"
)

var validSeeds = []string{
	``, ` `, `{}`, `[]`, `{ }`, `[ ]`, `null`, `true`, `false`, `nul`, `truex`, `0`, `-0`, `01`, `-`, `1.`, `1.5`, `1e5`, `1E+5`,
	`1e`, `-1.5e-3`, `.5`, `"a"`, `"a`, `"\u00e9\n\"\\"`, `"\u00g0"`, `"\x"`, "\"\x01\"", "\"\xff\"",
	`{"a":1}`, `{"a" 1}`, `{"a":}`, `{"a":1,}`, `{,"a":1}`, `{"a":1 "b":2}`, `{1:2}`, `[1,2,[3,{"b":"}"}]]`,
	`[1,]`, `[,1]`, `[1 2]`, `{"a":[}`, `[{]`, `{"a":1}}`, `{"a":1} x`, " \t\r\n{\"a\" : [ true , null ] }\n ",
	`{"events":{"cursor":"1:2","type":"tenant.created","streamId":"tenant-x"}}`,
	strings.Repeat("[", 40) + strings.Repeat("]", 40), strings.Repeat("[", 40) + strings.Repeat("]", 39),
	strings.Repeat(`{"a":`, 40) + "1" + strings.Repeat("}", 40),
}

// validJSON agrees with json.Valid.
func TestValidJSONAgreesWithTheStandardLibrary(t *testing.T) {
	t.Parallel()
	for _, in := range validSeeds {
		if got, want := validJSON([]byte(in)), json.Valid([]byte(in)); got != want {
			t.Errorf("%q: %v, want %v", in, got, want)
		}
	}
}

// Strings long enough to be read eight bytes at a time hold each byte
// that ends the plain run (and some that do not) at every place in a word.
func TestValidJSONFindsEveryByteThatEndsAPlainRun(t *testing.T) {
	t.Parallel()
	for _, c := range []byte{'"', '\\', 0x00, 0x01, 0x1f, 0x20, 0x21, 0x5b, 0x5d, 0x7f, 0x80, 0xa2, 0xdc, 0xff} {
		for at := range 24 {
			body := []byte(strings.Repeat("abcdefgh", 3))
			body[at] = c
			for _, in := range []string{`"` + string(body) + `"`, `{"` + string(body) + `":1}`, `["` + string(body) + `\"x"]`} {
				if got, want := validJSON([]byte(in)), json.Valid([]byte(in)); got != want {
					t.Errorf("%q: %v, want %v", in, got, want)
				}
			}
		}
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, s := range validSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if got, want := validJSON([]byte(in)), json.Valid([]byte(in)); got != want {
			t.Errorf("%q: %v, want %v", in, got, want)
		}
	})
}

func BenchmarkValidJSON(b *testing.B) {
	in := []byte(`{"events":{"cursor":"18446744:1234567","type":"tenant.created","streamId":"tenant-0123456789abcdef0123456789abcdef"}}`)
	b.Run("validJSON", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		for b.Loop() {
			validJSON(in)
		}
	})
	b.Run("json.Valid", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		for b.Loop() {
			json.Valid(in)
		}
	})
}
