package domain_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"cairn/domain"
)

func TestSharedChecks(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", domain.MaxIDLength+1)
	tests := []struct {
		name   string
		err    error
		field  string // "" when the check passes
		reason string // a part of the reason
	}{
		{"id ok", domain.ValidateID("nodeId", "n-1.a:b_c"), "", ""},
		{"id missing", domain.ValidateID("nodeId", ""), "nodeId", "is required"},
		{"id starts with a dot", domain.ValidateID("nodeId", ".n"), "nodeId", "starting with a letter or digit"},
		{"id with a space", domain.ValidateID("nodeId", "n 1"), "nodeId", "1 to 128 characters"},
		{"id too long", domain.ValidateID("nodeId", long), "nodeId", "1 to 128 characters"},
		{"id at the limit", domain.ValidateID("nodeId", long[1:]), "", ""},
		{"shorter id", domain.ValidateIDUpTo("scheduleId", long[:112], 111), "scheduleId", "1 to 111 characters"},
		{"optional id left out", domain.ValidateOptionalID("locationId", ""), "", ""},
		{"ids listed twice", domain.ValidateIDs("remaining", []string{"a", "b", "a"}), "remaining[2]", "listed twice"},
		{"no time", domain.ValidateAt(time.Time{}), "at", "is required"},
		{"text with a newline", domain.ValidateText("reason", "a\nb", 10), "", ""},
		{"text with a bell", domain.ValidateText("reason", "a\ab", 10), "reason", "control characters"},
		{"text too long", domain.ValidateText("reason", "abcdef", 5), "reason", "at most 5 bytes"},
		{"text not UTF-8", domain.ValidateText("reason", "\xff", 5), "reason", "UTF-8"},
		{"required text", domain.ValidateRequiredText("cause", "", 5), "cause", "is required"},
		{"line with a tab", domain.ValidateLine("hostname", "a\tb", 10), "hostname", "printable"},
		{"name padded", domain.ValidateName("name", " web", 10), "name", "start or end with spaces"},
		{"name on two lines", domain.ValidateName("name", "a\nb", 10), "name", "one line"},
		{"json not an object", domain.ValidateJSON("outputs", json.RawMessage(`[1]`), 100, true), "outputs", "JSON object"},
		{"json invalid", domain.ValidateJSON("outputs", json.RawMessage(`{`), 100, false), "outputs", "valid JSON"},
		{"json too big", domain.ValidateJSON("outputs", json.RawMessage(`{"a":1}`), 3, true), "outputs", "at most 3 bytes"},
		{"secret hash ok", domain.ValidateSecretHash("secretHash", strings.Repeat("0a", 32)), "", ""},
		{"secret hash upper case", domain.ValidateSecretHash("secretHash", strings.Repeat("0A", 32)), "secretHash", "lower-case hex"},
		{"secret hash short", domain.ValidateSecretHash("secretHash", "abc"), "secretHash", "not 3 characters"},
	}
	for _, tt := range tests {
		var ve *domain.ValidationError
		switch {
		case tt.field == "" && tt.err != nil:
			t.Errorf("%s: unexpected %v", tt.name, tt.err)
		case tt.field == "":
		case !errors.As(tt.err, &ve):
			t.Errorf("%s: want a ValidationError on %s, got %v", tt.name, tt.field, tt.err)
		case ve.Field != tt.field || !strings.Contains(ve.Reason, tt.reason):
			t.Errorf("%s: got %s: %s; want %s: …%s…", tt.name, ve.Field, ve.Reason, tt.field, tt.reason)
		}
	}
}

func TestAdmit(t *testing.T) {
	t.Parallel()
	type status string
	table := map[status][]string{"open": {"close"}}
	at := time.Unix(1, 0)
	var nf *domain.NotFoundError
	var se *domain.StateError
	var ve *domain.ValidationError
	if err := domain.Admit("door", "", status(""), table, "doorId", "d1", "close", at); !errors.As(err, &nf) {
		t.Errorf("missing entity: %v", err)
	}
	if err := domain.Admit("door", "d1", status("open"), table, "doorId", "d2", "close", at); !errors.As(err, &ve) || ve.Field != "doorId" {
		t.Errorf("another entity: %v", err)
	}
	if err := domain.Admit("door", "d1", status("open"), table, "doorId", "d1", "open", at); !errors.As(err, &se) || se.State != "open" {
		t.Errorf("command not allowed: %v", err)
	}
	if err := domain.Admit("door", "d1", status("open"), table, "doorId", "d1", "close", at); err != nil {
		t.Errorf("allowed: %v", err)
	}
}
