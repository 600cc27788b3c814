// Package pgcluster runs a private PostgreSQL cluster from the server binaries
// installed on the machine. Cairn uses it when no DATABASE_URL is given, so
// that `make run` and the test suite need nothing but the binaries.
package pgcluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// ErrNoServerBinaries is returned when no PostgreSQL server binaries are found.
var ErrNoServerBinaries = errors.New(`no PostgreSQL server binaries found (looked on PATH, in "pg_config --bindir" and under /usr/lib/postgresql/*/bin): ` +
	`install them (Debian/Ubuntu: "apt-get install postgresql-15"), or set DATABASE_URL to a running server`)

// FindBinDir locates a directory holding initdb and postgres: on PATH, then
// where pg_config says, then the newest version under /usr/lib/postgresql.
func FindBinDir() (string, error) {
	if dir, ok := binDirOf("initdb"); ok {
		return dir, nil
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dir := strings.TrimSpace(string(out))
		if hasServer(dir) {
			return dir, nil
		}
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	// Newest major version first: "15" sorts after "9.6" only numerically.
	sort.Slice(matches, func(i, j int) bool { return versionOf(matches[i]) > versionOf(matches[j]) })
	for _, dir := range matches {
		if hasServer(dir) {
			return dir, nil
		}
	}
	return "", ErrNoServerBinaries
}

func binDirOf(name string) (string, bool) {
	p, err := exec.LookPath(name)
	if err != nil {
		return "", false
	}
	// A link on PATH leads to the installation's own directory, which
	// holds the client tools (pg_dump) beside the server.
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	dir := filepath.Dir(p)
	return dir, hasServer(dir)
}

func hasServer(dir string) bool {
	for _, name := range []string{"initdb", "postgres"} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

func versionOf(binDir string) float64 {
	var v float64
	_, _ = fmt.Sscanf(filepath.Base(filepath.Dir(binDir)), "%g", &v)
	return v
}
