package events_test

import (
	"strings"
	"testing"

	"cairn/domain/events"
)

// Every aggregate's events are registered, each under its aggregate's prefix,
// at schema version 1.
func TestRegistry(t *testing.T) {
	t.Parallel()
	r := events.Registry()
	prefixes := map[string]int{}
	for _, typ := range r.Types() {
		prefix, name, ok := strings.Cut(typ, ".")
		if !ok || name == "" {
			t.Errorf("event type %q is not \"aggregate.event\"", typ)
		}
		prefixes[prefix]++
		if v, err := r.SchemaVersion(typ); err != nil || v != 1 {
			t.Errorf("%s: schema version %d, %v", typ, v, err)
		}
	}
	for _, prefix := range []string{"node", "job", "template", "service", "resource", "tenant", "user", "api_token", "location", "join_token", "node_credential", "schedule"} {
		if prefixes[prefix] == 0 {
			t.Errorf("no %s events registered", prefix)
		}
	}
	if len(prefixes) != 12 {
		t.Errorf("unexpected prefixes: %v", prefixes)
	}
}
