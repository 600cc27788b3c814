package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"cairn/graph/client"
)

// The audit commands work against a running server through its API: an
// export downloaded there (resumed when the download breaks) is the same
// file an export from the database writes, and verifies, offline and
// against the log; a tampered copy does not.
func TestAuditThroughTheServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cairn and cairnd and runs the server")
	}
	srv := startServer(t)
	admin := client.New(srv.url, srv.token, nil)
	for i := range 40 {
		gql(t, admin, `mutation($n: String!) { createTenant(input: {name: $n}) { tenant { id } } }`, map[string]any{"n": fmt.Sprintf("tenant %d", i)}, nil)
	}

	// A proxy in front of the server that cuts the first export download
	// short, in the middle of a line.
	target, _ := url.Parse(srv.url)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var exports atomic.Int32
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/audit/export" || exports.Add(1) > 1 {
			proxy.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		proxy.ServeHTTP(rec, r)
		for k, vs := range rec.Header() {
			w.Header()[k] = vs
		}
		w.WriteHeader(rec.Code)
		body := rec.Body.Bytes()
		_, _ = w.Write(body[:len(body)/2])
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
			}
		}
	}))
	t.Cleanup(front.Close)

	c := newCLI(t)
	if _, errOut, code := c.runInput(srv.token+"\n", "login", "--server", front.URL); code != 0 {
		t.Fatalf("login: %s", errOut)
	}
	dir := t.TempDir()
	viaAPI := filepath.Join(dir, "api.ndjson")
	_, errOut, code := c.run("audit", "export", "-f", viaAPI)
	if code != 0 || !strings.Contains(errOut, "resuming after") || !strings.Contains(errOut, "exported") {
		t.Fatalf("audit export through a download that broke: exit %d, %q", code, errOut)
	}
	if exports.Load() < 2 {
		t.Fatalf("the export was downloaded %d times: it was not resumed", exports.Load())
	}
	last := lastCursor(t, viaAPI)

	// The same stretch from the database: the same bytes, trailer included,
	// once both are pinned to the same end.
	pinned := filepath.Join(dir, "api-pinned.ndjson")
	c.must("audit", "export", "-f", pinned, "--to", last)
	direct := newCLI(t)
	direct.databaseURL = srv.db
	fromDB := filepath.Join(dir, "db.ndjson")
	direct.must("audit", "export", "-f", fromDB, "--to", last)
	if a, b := readFile(t, pinned), readFile(t, fromDB); a != b {
		t.Fatalf("the export through the API differs from the database's:\n%s\n---\n%s", lastBytes(a), lastBytes(b))
	}
	// The resumed file differs from the pinned one only in its trailer's
	// "to"; its lines are the same.
	if a, b := withoutTrailer(readFile(t, viaAPI)), withoutTrailer(readFile(t, pinned)); a != b {
		t.Fatal("the resumed export's lines differ from an unbroken one's")
	}

	// Verified offline and against the log through the server.
	out, errOut, code := c.run("audit", "verify", viaAPI, "--server")
	if code != 0 || !strings.Contains(out, "OK:") || !strings.Contains(out, "stream heads match the log") {
		t.Fatalf("audit verify --server: exit %d\n%s%s", code, out, errOut)
	}
	if out := c.must("audit", "verify", "--server"); !strings.Contains(out, "every chain verifies") {
		t.Fatalf("audit verify --server of the log:\n%s", out)
	}
	// A tampered copy fails offline, naming the line.
	tampered := filepath.Join(dir, "tampered.ndjson")
	body := strings.Replace(readFile(t, viaAPI), `"name":"tenant 7"`, `"name":"tenant 8"`, 1)
	if err := os.WriteFile(tampered, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, _, code := c.run("audit", "verify", tampered); code != exitError || !strings.Contains(out, "BROKEN") {
		t.Fatalf("a tampered export: exit %d\n%s", code, out)
	}

	// A malformed request is answered at once, saying what is wrong.
	req, _ := http.NewRequest(http.MethodGet, srv.url+"/audit/export?from=yesterday-ish", nil)
	req.Header.Set("Authorization", "Bearer "+srv.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(msg), "from") {
		t.Fatalf("an export from a malformed point: %d %s", resp.StatusCode, msg)
	}

	// A tenant's member may not read the whole log.
	var u struct {
		CreateUser struct{ User struct{ ID string } }
	}
	gql(t, admin, `mutation { createTenant(input: {id: "acme", name: "Acme"}) { tenant { id } } }`, nil, nil)
	gql(t, admin, `mutation { createUser(input: {name: "member", role: TENANT_MEMBER, tenantId: "acme"}) { user { id } } }`, nil, &u)
	var tok struct {
		CreateApiToken struct{ Token string }
	}
	gql(t, admin, `mutation($u: ID) { createApiToken(input: {userId: $u}) { token } }`, map[string]any{"u": u.CreateUser.User.ID}, &tok)
	member := newCLI(t)
	if _, errOut, code := member.runInput(tok.CreateApiToken.Token+"\n", "login", "--server", srv.url); code != 0 {
		t.Fatalf("member login: %s", errOut)
	}
	if _, errOut, code := member.run("audit", "export", "-f", filepath.Join(dir, "member.ndjson")); code != exitError || !strings.Contains(errOut, "403") {
		t.Fatalf("a member's export: exit %d, %q", code, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "member.ndjson")); err == nil && len(b) > 0 {
		t.Fatalf("the refused export wrote %d bytes", len(b))
	}
}

func lastCursor(t *testing.T, path string) string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(readFile(t, path)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if _, rest, ok := strings.Cut(lines[i], `"cursor":"`); ok && !strings.HasPrefix(lines[i], `{"trailer"`) {
			c, _, _ := strings.Cut(rest, `"`)
			return c
		}
	}
	t.Fatalf("%s has no event line", path)
	return ""
}

func withoutTrailer(s string) string {
	i := strings.LastIndex(strings.TrimSuffix(s, "\n"), "\n")
	return s[:i+1]
}

func lastBytes(s string) string {
	if len(s) > 600 {
		return s[len(s)-600:]
	}
	return s
}
