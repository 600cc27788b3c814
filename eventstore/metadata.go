package eventstore

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// decodeMetadata decodes an event's metadata. Reading the log in order
// decodes one per event, so the common shape — a flat object of plain
// strings, as append writes it — is read directly; anything else (escapes,
// extra fields, another layout) goes through encoding/json, whose result is
// the same.
func decodeMetadata(b []byte, m *Metadata) error {
	if decodeFlatMetadata(b, m) {
		return nil
	}
	*m = Metadata{}
	return json.Unmarshal(b, m)
}

// decodeFlatMetadata reads {"k":"v",...} with known keys and values free of
// escapes, and reports whether b had that shape.
func decodeFlatMetadata(b []byte, m *Metadata) bool {
	b = trimSpace(b)
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' || bytes.IndexByte(b, '\\') >= 0 {
		return false
	}
	rest := trimSpace(b[1 : len(b)-1])
	var out Metadata
	for len(rest) > 0 {
		key, r, ok := quoted(rest)
		if !ok {
			return false
		}
		r = trimSpace(r)
		if len(r) == 0 || r[0] != ':' {
			return false
		}
		val, r, ok := quoted(trimSpace(r[1:]))
		if !ok {
			return false
		}
		var field *string
		switch string(key) {
		case "commandId":
			field = &out.CommandID
		case "correlationId":
			field = &out.CorrelationID
		case "causationId":
			field = &out.CausationID
		case "actor":
			field = &out.Actor
		case "tenant":
			field = &out.Tenant
		case "commandFingerprint":
			field = &out.CommandFingerprint
		default:
			return false
		}
		*field = string(val)
		r = trimSpace(r)
		switch {
		case len(r) == 0:
			rest = r
		case r[0] == ',':
			rest = trimSpace(r[1:])
			if len(rest) == 0 {
				return false // a trailing comma is not JSON
			}
		default:
			return false
		}
	}
	*m = out
	return true
}

// quoted splits b after a leading JSON string without escapes (checked by
// the caller) and returns its contents. Control characters are refused, as
// JSON refuses them, and so is what is not UTF-8.
func quoted(b []byte) (s, rest []byte, ok bool) {
	if len(b) == 0 || b[0] != '"' {
		return nil, nil, false
	}
	end := bytes.IndexByte(b[1:], '"')
	if end < 0 {
		return nil, nil, false
	}
	s = b[1 : 1+end]
	for _, c := range s {
		if c < 0x20 {
			return nil, nil, false
		}
	}
	if !utf8.Valid(s) {
		return nil, nil, false // encoding/json replaces what is not UTF-8
	}
	return s, b[2+end:], true
}

// trimSpace trims what JSON calls whitespace (bytes.TrimSpace trims more).
func trimSpace(b []byte) []byte {
	return bytes.Trim(b, " \t\n\r")
}
