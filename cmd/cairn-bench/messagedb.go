package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// messageDBDir is where `make bench` installs Message DB's npm package (see
// peers/package.json), relative to the repository's root.
const messageDBDir = "cmd/cairn-bench/peers/node_modules/@eventide/message-db/database"

// messageDBFiles are the package's SQL files in the order its install.sh
// runs them; the roles and privileges are left out: the benchmark writes as
// the database's owner.
var messageDBFiles = []string{
	"schema/message-store.sql", "extensions/pgcrypto.sql", "tables/messages.sql", "types/message.sql",
	"functions/message-store-version.sql", "functions/hash-64.sql", "functions/acquire-lock.sql",
	"functions/category.sql", "functions/is-category.sql", "functions/id.sql", "functions/cardinal-id.sql",
	"functions/stream-version.sql", "functions/write-message.sql", "functions/get-stream-messages.sql",
	"functions/get-category-messages.sql", "functions/get-last-stream-message.sql",
	"indexes/messages-id.sql", "indexes/messages-stream.sql", "indexes/messages-category.sql",
}

// errNoMessageDB: its package is not installed (make bench installs it).
var errNoMessageDB = errors.New("the package of Message DB is not installed: run make bench, which installs it (npm, cmd/cairn-bench/peers)")

// messageDB installs Message DB in the benchmark's database, as its
// install.sh would, and returns a pool whose sessions find its functions,
// as its own role's do.
func messageDB(ctx context.Context, e *env) (*pgxpool.Pool, error) {
	if _, err := os.Stat(messageDBDir); errors.Is(err, fs.ErrNotExist) {
		return nil, errNoMessageDB
	}
	for _, f := range messageDBFiles {
		sql, err := os.ReadFile(filepath.Join(messageDBDir, f))
		if err != nil {
			return nil, fmt.Errorf("read Message DB: %w", err)
		}
		if _, err := e.admin.Exec(ctx, string(sql), pgx.QueryExecModeSimpleProtocol); err != nil {
			return nil, fmt.Errorf("install Message DB: %s: %w", f, err)
		}
	}
	cfg, err := pgxpool.ParseConfig(e.admin.Config().ConnString())
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = 40
	cfg.ConnConfig.RuntimeParams["search_path"] = "message_store,public"
	return pgxpool.NewWithConfig(ctx, cfg)
}

// writeMessage writes one message with Message DB's write_message, the
// way its clients do: a new message id, no expected version.
func writeMessage(ctx context.Context, pool *pgxpool.Pool, stream string, n int64) error {
	_, err := pool.Exec(ctx, `SELECT message_store.write_message($1, $2, 'NodeReported', $3)`,
		newUUID(), stream, `{"seq":`+strconv.FormatInt(n, 10)+`,"node":"node-1","status":"online"}`)
	return err
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
