package builtin_test

import (
	"context"
	"fmt"
	nethttp "net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"cairn/plugins/agent"
	"cairn/plugins/agent/local"
	"cairn/plugins/builtin"
	"cairn/plugins/terraform"
	"cairn/sal"
)

func TestRegistryFromConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "dns.secret")
	if err := os.WriteFile(secretFile, []byte("0123456789abcdef0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		fmt.Fprint(w, `{"types":[{"name":"dns-record"}]}`)
	}))
	defer srv.Close()
	sys, err := sal.New(sal.Config{FileRoots: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := builtin.Config{
		HTTP: []builtin.HTTPEndpoint{{Name: "dns", Endpoint: srv.URL, SecretFile: secretFile}},
		Exec: []builtin.Executable{{Name: "filestore", Command: []string{"sh", "-c",
			`read line; echo '{"jsonrpc":"2.0","id":1,"result":{"types":[{"name":"file"}]}}'; cat >/dev/null`}}},
	}
	reg, err := builtin.Registry(context.Background(), cfg, builtin.Deps{
		AgentRunner: local.Runner{System: sys, NodeID: "n1"}, AgentNodes: agent.StaticNodes{{ID: "n1"}}, DataDir: dir,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	want := []string{"agent", "dns", "filestore"}
	if _, ok := terraform.Find(); ok {
		want = append(want, "terraform")
	}
	if got := reg.Names(); !slices.Equal(got, want) {
		t.Fatalf("names %v, want %v", got, want)
	}

	cfg.HTTP[0].SecretFile = filepath.Join(dir, "missing")
	if _, err := builtin.Registry(context.Background(), cfg, builtin.Deps{}); err == nil || !strings.Contains(err.Error(), "read the secret") {
		t.Fatalf("missing secret: %v", err)
	}
}
