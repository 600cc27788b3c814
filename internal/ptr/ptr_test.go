package ptr_test

import (
	"testing"
	"time"

	"cairn/internal/ptr"
)

func TestValue(t *testing.T) {
	t.Parallel()
	s, at := "x", time.Unix(5, 0)
	if ptr.Value(&s) != "x" || ptr.Value[string](nil) != "" {
		t.Error("strings")
	}
	if !ptr.Value(&at).Equal(at) || !ptr.Value[time.Time](nil).IsZero() {
		t.Error("times")
	}
}
