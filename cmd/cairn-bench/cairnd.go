package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"cairn/internal/database"
)

// servedCairnd is a cairnd built from this tree, serving a database of its
// own on the benchmark's cluster, as operators run it.
type servedCairnd struct {
	url, token string
	bin        string // where the commands were built
	pid        int
	stop       func()
}

// startCairnd builds cairnd and the other commands named (./cmd/...) into
// work/bin, makes a database for it, and starts `cairnd serve` with args
// once it is ready with its first administrator token.
func startCairnd(ctx context.Context, e *env, work, dbPrefix string, commands []string, args ...string) (*servedCairnd, error) {
	bin := filepath.Join(work, "bin")
	build := append([]string{"build", "-o", bin + "/", "./cmd/cairnd"}, commands...)
	if out, err := exec.CommandContext(ctx, "go", build...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build cairnd %v: %v\n%s", commands, err, out)
	}
	cc := e.admin.Config().ConnConfig
	dsn := func(db string) string {
		return fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable", cc.Host, cc.Port, cc.User, db)
	}
	dbName := fmt.Sprintf("%s_%d", dbPrefix, time.Now().UnixNano())
	if err := database.CreateDatabase(ctx, dsn("postgres"), dbName, ""); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	var logs bytes.Buffer
	srv := exec.CommandContext(ctx, filepath.Join(bin, "cairnd"), append([]string{"serve", "--listen", addr,
		"--data-dir", filepath.Join(work, "data"), "--log-format", "json"}, args...)...)
	srv.Env = append(os.Environ(), "DATABASE_URL="+dsn(dbName))
	srv.Stdout, srv.Stderr = &logs, &logs
	if err := srv.Start(); err != nil {
		return nil, err
	}
	stop := func() {
		_ = srv.Process.Signal(os.Interrupt)
		_ = srv.Wait()
	}
	url := "http://" + addr
	token, err := waitReady(ctx, url, &logs)
	if err != nil {
		stop()
		return nil, err
	}
	return &servedCairnd{url: url, token: token, bin: bin, pid: srv.Process.Pid, stop: stop}, nil
}
