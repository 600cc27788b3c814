package ocl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
)

// The package works on one JSON model whatever the input format: map[string]any,
// []any, string, json.Number, bool and nil. Numbers stay json.Number so that
// large integers survive and so that both formats normalise the same way.

// decodeValue parses one JSON value into the model.
func decodeValue(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return normalizeNumbers(v)
}

// normalizeNumbers rewrites every json.Number in v to its canonical spelling.
func normalizeNumbers(v any) (any, error) {
	switch t := v.(type) {
	case json.Number:
		n, err := canonicalNumber(string(t))
		if err != nil {
			return nil, err
		}
		return n, nil
	case map[string]any:
		for k, e := range t {
			n, err := normalizeNumbers(e)
			if err != nil {
				return nil, err
			}
			t[k] = n
		}
	case []any:
		for i, e := range t {
			n, err := normalizeNumbers(e)
			if err != nil {
				return nil, err
			}
			t[i] = n
		}
	}
	return v, nil
}

// canonicalNumber spells a JSON number one way: integers as plain digits (so
// 1.0, 1e0 and 1 agree), everything else in Go's shortest float form. Integer
// literals too large for a float keep their digits exactly.
func canonicalNumber(s string) (json.Number, error) {
	if isIntegerLiteral(s) {
		var b big.Int
		if _, ok := b.SetString(s, 10); !ok {
			return "", fmt.Errorf("invalid number %q", s)
		}
		return json.Number(b.String()), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return "", fmt.Errorf("number %s is out of range", s)
	}
	return floatNumber(f), nil
}

func floatNumber(f float64) json.Number {
	if f == math.Trunc(f) && math.Abs(f) <= 1e15 {
		return json.Number(strconv.FormatInt(int64(f), 10))
	}
	return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
}

func isIntegerLiteral(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// canonicalize re-encodes raw JSON in canonical form.
func canonicalize(raw []byte) ([]byte, error) {
	v, err := decodeValue(raw)
	if err != nil {
		return nil, err
	}
	return encodeCanonical(v), nil
}

// encodeCanonical writes the model with sorted keys and no HTML escaping. Values
// in the model are already normalised, so this cannot fail.
func encodeCanonical(v any) []byte {
	var b bytes.Buffer
	writeCanonical(&b, v)
	return b.Bytes()
}

func writeCanonical(b *bytes.Buffer, v any) {
	switch t := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if t {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case json.Number:
		b.WriteString(string(t))
	case string:
		writeString(b, t)
	case []any:
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanonical(b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		b.WriteByte('{')
		for i, k := range sortedKeys(t) {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			writeCanonical(b, t[k])
		}
		b.WriteByte('}')
	default:
		// The model has no other types. Should a bug let one through, encode it
		// as encoding/json would rather than bring the control plane down.
		raw, err := json.Marshal(t)
		if err != nil {
			raw = []byte("null")
		}
		b.Write(raw)
	}
}

func writeString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	b.Truncate(b.Len() - 1)
}

// jsonType names a model value's JSON type for messages.
func jsonType(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		if isIntegerLiteral(string(t)) {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// textOf is how a value reads when interpolated into a longer string: strings
// as themselves, null as nothing, everything else as compact JSON.
func textOf(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case nil:
		return ""
	}
	return string(encodeCanonical(v))
}

// deepCopy copies a model value so rewrites never alias the input.
func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		s := make([]any, len(t))
		for i, e := range t {
			s[i] = deepCopy(e)
		}
		return s
	}
	return v
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
