// Command cairn-agent is the daemon on each node: it enrolls the node with a
// join token, connects out to the control plane and runs the jobs leased to
// the node through the SAL. See docs/agent.md.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"cairn/agent"
)

// version is set by the build (-ldflags -X main.version=...).
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() { <-ctx.Done(); stop() }()
	err := newRootCommand(os.Getenv, os.Stderr).ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cairn-agent:", err)
		os.Exit(1)
	}
}

type options struct {
	server, joinToken, dataDir, transport, hostname string
	labels, fileRoots                               []string
	workDir                                         string
	statsInterval                                   time.Duration
	statsBatch                                      int
	logLevel, logFormat                             string
}

// envFlags pairs flags with the environment variables that set them. The
// join token is best passed this way: a command line shows in the process
// list.
var envFlags = []struct{ flag, env string }{
	{"server", "CAIRN_SERVER"},
	{"join-token", "CAIRN_JOIN_TOKEN"},
	{"data-dir", "CAIRN_AGENT_DATA_DIR"},
	{"transport", "CAIRN_AGENT_TRANSPORT"},
	{"log-level", "CAIRN_LOG_LEVEL"},
}

func newRootCommand(getenv func(string) string, stderr io.Writer) *cobra.Command {
	var o options
	root := &cobra.Command{
		Use:   "cairn-agent",
		Short: "Run a node's jobs for the Cairn control plane",
		Long: `cairn-agent runs on each node. On its first start it enrolls the node with a
join token an operator issued (cairn nodes join-token) and keeps the node
credential it receives in its data directory (mode 0600); afterwards the
credential is enough. It only ever connects out: a GraphQL subscription over
WebSocket, or long polls over plain HTTP when WebSockets are blocked.

Jobs run in runner processes that outlive the agent: stopping or restarting the
agent loses no output and runs no job twice. Supervised processes (a service's
processes) are the agent's own children: stopping the agent stops them.`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyEnv(cmd.Flags(), getenv); err != nil {
				return err
			}
			labels, err := parseLabels(o.labels)
			if err != nil {
				return err
			}
			log, err := logger(stderr, o.logLevel, o.logFormat)
			if err != nil {
				return err
			}
			a, err := agent.New(agent.Config{
				Server: o.server, JoinToken: o.joinToken, DataDir: o.dataDir, Hostname: o.hostname,
				Labels: labels, Transport: o.transport, FileRoots: o.fileRoots, WorkDir: o.workDir,
				StatsInterval: o.statsInterval, StatsBatch: o.statsBatch, Log: log,
			})
			if err != nil {
				return err
			}
			return a.Run(cmd.Context())
		},
	}
	root.SetVersionTemplate("{{.Version}}\n")
	fs := root.Flags()
	fs.StringVar(&o.server, "server", "", "the control plane's URL, e.g. http://cairn.example:8080, or its replicas' URLs separated by commas: the agent moves to the next when one cannot be reached (env CAIRN_SERVER)")
	fs.StringVar(&o.joinToken, "join-token", "", "join token to enroll the node with on the first start (env CAIRN_JOIN_TOKEN)")
	fs.StringVar(&o.dataDir, "data-dir", "/var/lib/cairn-agent", "directory for the credential and the job journal (env CAIRN_AGENT_DATA_DIR)")
	fs.StringVar(&o.transport, "transport", agent.TransportAuto, "auto, websocket or poll (env CAIRN_AGENT_TRANSPORT)")
	fs.StringVar(&o.hostname, "hostname", "", "hostname to enroll under (default: the machine's)")
	fs.StringArrayVar(&o.labels, "label", nil, "label key=value the node asks for at enrollment (repeatable)")
	fs.StringArrayVar(&o.fileRoots, "file-root", nil, "directory file actions may touch (repeatable); none: every path is refused")
	fs.StringVar(&o.workDir, "work-dir", "", "working directory of jobs that name none")
	fs.DurationVar(&o.statsInterval, "stats-interval", 10*time.Second, "how often statistics are sampled")
	fs.IntVar(&o.statsBatch, "stats-batch", 6, "samples per statistics report")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error (env CAIRN_LOG_LEVEL)")
	fs.StringVar(&o.logFormat, "log-format", "auto", "json, console, or auto (console on a terminal)")
	root.AddCommand(&cobra.Command{
		Use:    "run-job DIR",
		Short:  "Run one job from its journal directory (started by the agent itself)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE:   func(_ *cobra.Command, args []string) error { return agent.RunJob(args[0]) },
	})
	return root
}

func applyEnv(fs *pflag.FlagSet, getenv func(string) string) error {
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
	return nil
}

func parseLabels(in []string) (map[string]string, error) {
	out := map[string]string{}
	for _, l := range in {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("label %q: write key=value", l)
		}
		out[k] = v
	}
	return out, nil
}

func logger(w io.Writer, level, format string) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil || level == "" {
		return zerolog.Logger{}, fmt.Errorf("log level %q: use debug, info, warn or error", level)
	}
	out := w
	switch format {
	case "json":
	case "console":
		out = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly}
	case "auto":
		if f, ok := w.(*os.File); ok {
			if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
				out = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly}
			}
		}
	default:
		return zerolog.Logger{}, fmt.Errorf("log format %q: use json, console or auto", format)
	}
	return zerolog.New(out).Level(lvl).With().Timestamp().Logger(), nil
}
