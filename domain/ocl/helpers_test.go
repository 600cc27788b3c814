package ocl

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// testCatalog stands in for the plugin registry: the agent and http plugins
// with property schemas close to the real ones.
type testCatalog map[string]map[string]json.RawMessage

func (c testCatalog) ResourceTypes(plugin string) (map[string]json.RawMessage, bool) {
	t, ok := c[plugin]
	return t, ok
}

var catalog = testCatalog{
	"agent": {
		"directory": json.RawMessage(`{"type":"object","required":["path"],"additionalProperties":false,
			"properties":{"path":{"type":"string","pattern":"^/"},"mode":{"type":"string"}}}`),
		"file": json.RawMessage(`{"type":"object","required":["path","content"],"additionalProperties":false,
			"properties":{"node":{"type":"string"},"path":{"type":"string","pattern":"^/"},"mode":{"type":"string"},"content":{"type":"string"}}}`),
		"process": json.RawMessage(`{"type":"object","required":["argv"],"additionalProperties":false,
			"properties":{"node":{"type":"string"},"name":{"type":"string"},"argv":{"type":"array","items":{"type":"string"},"minItems":1},
			"env":{"type":"object","additionalProperties":{"type":"string"}},"port":{"type":"integer","minimum":1,"maximum":65535}}}`),
	},
	"http": {
		"dns-record": json.RawMessage(`{"type":"object","required":["zone","name","type","target"],
			"properties":{"ttl":{"type":"integer","minimum":60}}}`),
	},
	"noop": {
		"thing": nil,
	},
}

func mustParse(t testing.TB, doc string) *Descriptor {
	t.Helper()
	d, err := Parse([]byte(doc))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return d
}

func problemsOf(t testing.TB, err error) []Problem {
	t.Helper()
	if err == nil {
		return nil
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %T %v is not a *ValidationError", err, err)
	}
	return ve.Problems
}

// hasProblem reports whether ps holds a problem at exactly path whose
// message contains msg.
func hasProblem(ps []Problem, path, msg string) bool {
	for _, p := range ps {
		if p.Path == path && strings.Contains(p.Message, msg) {
			return true
		}
	}
	return false
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }
