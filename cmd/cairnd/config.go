package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"
)

// DatabaseURLEnv names the server to use instead of the embedded cluster. It
// has no flag, so a password in it never shows in the process list.
const DatabaseURLEnv = "DATABASE_URL"

// DatabaseOwnerURLEnv names the schema's owner on a server of your own: it
// runs the migrations, and DATABASE_URL's role then only serves.
const DatabaseOwnerURLEnv = "DATABASE_OWNER_URL"

// DatabaseReadURLEnv names a streaming standby of DATABASE_URL's server that
// queries not waiting for a write may read (optional).
const DatabaseReadURLEnv = "DATABASE_READ_URL"

// config is cairnd's configuration. Each setting comes from its flag when
// given, else from its environment variable when set, else its default.
type config struct {
	Listen string
	// DebugListen serves Go's runtime profiles (/debug/pprof/) on a second
	// address; empty serves none.
	DebugListen string
	// Advertise is the address other replicas and people are shown for
	// this one; empty derives it from the listener (see advertisedAddress).
	Advertise        string
	DatabaseURL      string
	DatabaseOwnerURL string
	DatabaseReadURL  string
	DataDir          string
	LogFormat        string
	LogLevel         string
	// Plugins is a plugins configuration file (YAML or JSON, see
	// docs/plugins.md); empty runs with the plugins that need none.
	Plugins string
	Jobs    jobConfig
	// CheckpointEvery is how often the event log's chain checkpoint is
	// taken: removing events recorded before the last one shows in
	// verification.
	CheckpointEvery time.Duration
	// ReconcileInterval is how often every settled service's resources are
	// observed and repaired.
	ReconcileInterval time.Duration
	// SecretsKeyFile is the key that seals sensitive values; empty uses
	// (and on first start makes) secrets.key in the data directory. Every
	// replica of a cluster must use the same key.
	SecretsKeyFile string

	level zerolog.Level // LogLevel, parsed by resolve
	// gcPercent is the collector's target serve sets: defaultGCPercent
	// when GOGC is unset, 0 (Go's own handling of GOGC) when it is set.
	gcPercent int
}

// defaultGCPercent lets the heap grow to three times its live objects
// before the collector runs, not Go's two: a burst of work (a fan-out to
// 10,000 agents) ran five collections at Go's default, each marking the
// whole heap of the agents' connections, and spent a third of its CPU
// collecting; at 200 it runs two. The cost is a larger heap during
// bursts, which memtrim gives back once the server is quiet. GOGC, when
// set, is Go's to apply as usual.
const defaultGCPercent = 200

// envFlags pairs flags with the environment variables that set them.
var envFlags = []struct{ flag, env string }{
	{"listen", "CAIRN_LISTEN"},
	{"advertise", "CAIRN_ADVERTISE"},
	{"debug-listen", "CAIRN_DEBUG_LISTEN"},
	{"data-dir", "CAIRN_DATA_DIR"},
	{"log-format", "CAIRN_LOG_FORMAT"},
	{"log-level", "CAIRN_LOG_LEVEL"},
	{"plugins", "CAIRN_PLUGINS"},
	{"secrets-key-file", "CAIRN_SECRETS_KEY_FILE"},
}

func envOf(flag string) string {
	for _, ef := range envFlags {
		if ef.flag == flag {
			return ef.env
		}
	}
	return ""
}

// bindGlobalFlags declares the settings every command shares.
func (c *config) bindGlobalFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.DataDir, "data-dir", ".cairn",
		"directory for cairnd's own files; the embedded PostgreSQL cluster lives in its pgdata/ (env "+envOf("data-dir")+")")
	fs.StringVar(&c.LogFormat, "log-format", "auto",
		"log format: json, console, or auto (console when stderr is a terminal) (env "+envOf("log-format")+")")
	fs.StringVar(&c.LogLevel, "log-level", "info",
		"least severe level logged: debug, info, warn or error (env "+envOf("log-level")+")")
}

// bindServeFlags declares the settings only `serve` uses.
func (c *config) bindServeFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:8080",
		"address to serve HTTP on (env "+envOf("listen")+")")
	fs.StringVar(&c.DebugListen, "debug-listen", "",
		"address to serve Go's runtime profiles on (/debug/pprof/: heap, goroutines, CPU) for diagnosing a replica (env "+envOf("debug-listen")+"); default none. They are not authenticated: keep it on localhost")
	fs.StringVar(&c.Advertise, "advertise", "",
		"host:port (or URL) this replica is reached at, as the cluster status shows it (env "+envOf("advertise")+"); default: the listen address, with this host's name when listening on every interface")
	fs.StringVar(&c.Plugins, "plugins", "",
		"plugins configuration file, YAML or JSON: http endpoints, out-of-process plugins, terraform (env "+envOf("plugins")+"); the agent plugin needs none")
	c.Jobs.bindFlags(fs)
	fs.StringVar(&c.SecretsKeyFile, "secrets-key-file", "",
		"the 32-byte key that seals sensitive values (env "+envOf("secrets-key-file")+"); default: secrets.key in the data directory, made on first start. Replicas of one cluster must share it")
	fs.DurationVar(&c.ReconcileInterval, "reconcile-interval", 30*time.Second,
		"how often every running, registered or stopped service's resources are observed, and what is missing or on a lost node repaired (also at once when a node goes down)")
	fs.DurationVar(&c.CheckpointEvery, "chain-checkpoint-every", 10*time.Second,
		"how often the event log's hash chains are checkpointed, so that removing events recorded before shows in verification")
}

// resolve applies the environment to every flag not given on the command
// line, then checks the result.
func (c *config) resolve(fs *pflag.FlagSet, getenv func(string) string) error {
	for _, ef := range envFlags {
		f := fs.Lookup(ef.flag)
		if f == nil || f.Changed {
			continue
		}
		if v := getenv(ef.env); v != "" {
			if err := f.Value.Set(v); err != nil {
				return fmt.Errorf("%s=%q: %w", ef.env, v, err)
			}
		}
	}
	c.DatabaseURL = getenv(DatabaseURLEnv)
	c.DatabaseOwnerURL = getenv(DatabaseOwnerURLEnv)
	c.DatabaseReadURL = getenv(DatabaseReadURLEnv)
	if getenv("GOGC") == "" {
		c.gcPercent = defaultGCPercent
	}

	switch c.LogFormat {
	case "json", "console", "auto":
	default:
		return fmt.Errorf("log format %q: use json, console or auto", c.LogFormat)
	}
	level, err := zerolog.ParseLevel(c.LogLevel)
	if err != nil || c.LogLevel == "" {
		return fmt.Errorf("log level %q: use debug, info, warn or error", c.LogLevel)
	}
	c.level = level
	if err := checkAdvertise(c.Advertise); err != nil {
		return fmt.Errorf("advertised address %q: %w (--advertise or %s)", c.Advertise, err, envOf("advertise"))
	}
	if c.DataDir == "" {
		return fmt.Errorf("the data directory must not be empty (--data-dir or %s)", envOf("data-dir"))
	}
	return nil
}

// pgDataDir is where the embedded cluster keeps its files.
func (c *config) pgDataDir() string { return filepath.Join(c.DataDir, "pgdata") }

// logger builds the process logger writing to w (stderr in production).
func (c *config) logger(w io.Writer) zerolog.Logger {
	out := w
	if c.LogFormat == "console" || c.LogFormat == "auto" && isTerminal(w) {
		out = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly}
	}
	return zerolog.New(out).Level(c.level).With().Timestamp().Logger()
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
