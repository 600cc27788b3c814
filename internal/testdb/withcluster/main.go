// Command withcluster starts one private PostgreSQL cluster, runs the given
// command with CAIRN_TEST_CLUSTER pointing at it, and stops the cluster. The
// test suite uses it so every package shares one server per run.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"cairn/internal/pgcluster"
	"cairn/internal/testdb"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: withcluster COMMAND [ARGS...]")
		os.Exit(2)
	}
	os.Exit(run(os.Args[1:]))
}

func run(argv []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := pgcluster.Start(ctx, pgcluster.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "withcluster:", err)
		return 1
	}
	defer c.Stop()
	if _, err := testdb.EnsureTemplate(ctx, c.ConnString("postgres")); err != nil {
		fmt.Fprintln(os.Stderr, "withcluster: migrate template:", err)
		return 1
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), testdb.ClusterEnv+"="+c.ConnString("postgres"))
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		fmt.Fprintln(os.Stderr, "withcluster:", err)
		return 1
	}
	return 0
}
