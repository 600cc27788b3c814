package main

import (
	"testing"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"cairn/internal/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// resolveConfig parses args as cairnd's flags and resolves them against env.
func resolveConfig(t *testing.T, env map[string]string, args ...string) (*config, error) {
	t.Helper()
	cfg := &config{}
	fs := pflag.NewFlagSet("cairnd", pflag.ContinueOnError)
	cfg.bindGlobalFlags(fs)
	cfg.bindServeFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return cfg, cfg.resolve(fs, func(k string) string { return env[k] })
}

// testConfig is the configuration of a cairnd using the database at url.
func testConfig(t *testing.T, url string) *config {
	t.Helper()
	cfg, err := resolveConfig(t, map[string]string{
		DatabaseURLEnv:     url,
		"CAIRN_DATA_DIR":   t.TempDir(),
		"CAIRN_LOG_FORMAT": "json",
		"CAIRN_LOG_LEVEL":  "debug",
	})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func testLogger(t *testing.T) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.DebugLevel)
}
