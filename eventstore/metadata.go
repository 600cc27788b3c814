package eventstore

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// decodeMetadata decodes an event's metadata. Reading the log in order
// decodes one per event, so the common shape — a flat object of plain
// strings, as append writes it — is read directly, its values sharing s's
// memory; anything else (escapes, extra fields, another layout) goes through
// encoding/json, whose result is the same.
func decodeMetadata(s string, m *Metadata) error {
	if decodeFlatMetadata(s, m) {
		return nil
	}
	*m = Metadata{}
	return json.Unmarshal([]byte(s), m)
}

// decodeFlatMetadata reads {"k":"v",...} with known keys and values free of
// escapes, and reports whether s had that shape.
func decodeFlatMetadata(s string, m *Metadata) bool {
	s = trimSpace(s)
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' || strings.IndexByte(s, '\\') >= 0 {
		return false
	}
	rest := trimSpace(s[1 : len(s)-1])
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
		switch key {
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
		*field = val
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

// quoted splits s after a leading JSON string without escapes (checked by
// the caller) and returns its contents. Control characters are refused, as
// JSON refuses them, and so is what is not UTF-8.
func quoted(s string) (val, rest string, ok bool) {
	if len(s) == 0 || s[0] != '"' {
		return "", "", false
	}
	end := strings.IndexByte(s[1:], '"')
	if end < 0 {
		return "", "", false
	}
	val = s[1 : 1+end]
	for i := 0; i < len(val); i++ {
		if val[i] < 0x20 {
			return "", "", false
		}
	}
	if !utf8.ValidString(val) {
		return "", "", false // encoding/json replaces what is not UTF-8
	}
	return val, s[2+end:], true
}

// trimSpace trims what JSON calls whitespace (strings.TrimSpace trims more).
func trimSpace(s string) string {
	return strings.Trim(s, " \t\n\r")
}
