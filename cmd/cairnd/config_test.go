package main

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

func TestConfigPrecedence(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		cfg, err := resolveConfig(t, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := config{Listen: "127.0.0.1:8080", DataDir: ".cairn", LogFormat: "auto", LogLevel: "info", level: zerolog.InfoLevel,
			Jobs: defaultJobConfig(), CheckpointEvery: 10 * time.Second, ReconcileInterval: 30 * time.Second,
			gcPercent: defaultGCPercent}
		if *cfg != want {
			t.Fatalf("got %+v, want %+v", *cfg, want)
		}
	})
	env := map[string]string{
		"CAIRN_LISTEN":     "127.0.0.1:9000",
		"CAIRN_DATA_DIR":   "/var/lib/cairn",
		"CAIRN_LOG_FORMAT": "json",
		"CAIRN_LOG_LEVEL":  "debug",
		DatabaseURLEnv:     "postgres://cairn@db/cairn",
	}
	t.Run("environment over defaults", func(t *testing.T) {
		cfg, err := resolveConfig(t, env)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Listen != "127.0.0.1:9000" || cfg.DataDir != "/var/lib/cairn" || cfg.LogFormat != "json" ||
			cfg.LogLevel != "debug" || cfg.DatabaseURL != "postgres://cairn@db/cairn" {
			t.Fatalf("environment not applied: %+v", *cfg)
		}
	})
	t.Run("flags over environment", func(t *testing.T) {
		cfg, err := resolveConfig(t, env, "--listen", "127.0.0.1:7000", "--log-format", "console", "--data-dir", "here")
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Listen != "127.0.0.1:7000" || cfg.LogFormat != "console" || cfg.DataDir != "here" || cfg.LogLevel != "debug" {
			t.Fatalf("flags did not win: %+v", *cfg)
		}
	})
	t.Run("GOGC set leaves the collector to Go", func(t *testing.T) {
		for _, gogc := range []string{"100", "50", "off"} {
			cfg, err := resolveConfig(t, map[string]string{"GOGC": gogc})
			if err != nil {
				t.Fatal(err)
			}
			if cfg.gcPercent != 0 {
				t.Errorf("GOGC=%s: serve would set the collector's target to %d, want Go's reading of GOGC", gogc, cfg.gcPercent)
			}
		}
	})
	t.Run("bad values", func(t *testing.T) {
		for _, tc := range []struct {
			env  map[string]string
			args []string
			want string
		}{
			{map[string]string{"CAIRN_LOG_FORMAT": "xml"}, nil, `log format "xml"`},
			{nil, []string{"--log-level", "loud"}, `log level "loud"`},
			{nil, []string{"--data-dir", ""}, "data directory"},
		} {
			_, err := resolveConfig(t, tc.env, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("env %v args %v: got error %v, want one containing %q", tc.env, tc.args, err, tc.want)
			}
		}
	})
}

func TestAdvertisedAddress(t *testing.T) {
	t.Parallel()
	host := func() (string, error) { return "cairn-2.example", nil }
	for _, tc := range []struct {
		setting, listen, want string
	}{
		{"", "127.0.0.1:8080", "127.0.0.1:8080"},
		{"", "0.0.0.0:8080", "cairn-2.example:8080"},
		{"", "[::]:8443", "cairn-2.example:8443"},
		{"", "10.0.0.5:8080", "10.0.0.5:8080"},
		{"https://cairn.example", "0.0.0.0:8080", "https://cairn.example"},
	} {
		addr, err := net.ResolveTCPAddr("tcp", tc.listen)
		if err != nil {
			t.Fatal(err)
		}
		if got := advertisedAddress(tc.setting, addr, host); got != tc.want {
			t.Errorf("advertisedAddress(%q, %s) = %q, want %q", tc.setting, tc.listen, got, tc.want)
		}
	}
}

func TestAdvertiseSetting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value string
		ok    bool
	}{
		{"", true},
		{"cairn-1:8080", true},
		{"[fd00::1]:8080", true},
		{"http://cairn-1:8080", true},
		{"https://cairn.example", true},
		{"cairn-1", false},
		{":8080", false},
		{"cairn-1:http", false},
		{"ftp://cairn-1", false},
		{"https://", false},
	} {
		err := checkAdvertise(tc.value)
		if (err == nil) != tc.ok {
			t.Errorf("checkAdvertise(%q) = %v, want ok=%v", tc.value, err, tc.ok)
		}
	}
	if _, err := resolveConfig(t, map[string]string{"CAIRN_ADVERTISE": "cairn-1"}); err == nil || !strings.Contains(err.Error(), "CAIRN_ADVERTISE") {
		t.Fatalf("a bad CAIRN_ADVERTISE should be refused naming the variable, got %v", err)
	}
}
