package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func TestServerLogLevels(t *testing.T) {
	var buf bytes.Buffer
	forward := serverLog(zerolog.New(&buf))
	for _, line := range []string{
		`2026-01-02 03:04:05.678 UTC [1] LOG:  database system is ready to accept connections`,
		`2026-01-02 03:04:05.678 UTC [2] FATAL:  the database system is starting up`,
		`2026-01-02 03:04:05.678 UTC [3] ERROR:  database "cairn" already exists`,
		`2026-01-02 03:04:05.678 UTC [3] STATEMENT:  CREATE DATABASE "cairn"`,
		`2026-01-02 03:04:05.678 UTC [4] ERROR:  could not extend file: No space left on device`,
		`2026-01-02 03:04:05.678 UTC [4] HINT:  Check free disk space.`,
		`2026-01-02 03:04:05.678 UTC [5] WARNING:  could not flush dirty data`,
	} {
		forward(line)
	}
	want := []string{"debug", "debug", "debug", "debug", "error", "error", "warn"}
	got := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(got) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(got), len(want), buf.String())
	}
	for i, l := range got {
		if !strings.Contains(l, `"level":"`+want[i]+`"`) {
			t.Errorf("line %d: %s, want level %s", i, l, want[i])
		}
	}
}
