package builtin_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cairn/plugins/builtin"
)

func TestLoad(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file string
		check      func(t *testing.T, cfg builtin.Config)
		wantErr    string
	}{
		{name: "yaml", file: `
http:
  - name: dns
    endpoint: http://127.0.0.1:9053/
    secretFile: dns.secret
    timeout: 30s
    maxAttempts: 3
exec:
  - name: filestore
    command: [python3, filestore.py]
terraform:
  disabled: true
`, check: func(t *testing.T, cfg builtin.Config) {
			if len(cfg.HTTP) != 1 || cfg.HTTP[0].Name != "dns" || cfg.HTTP[0].Timeout != 30*time.Second || cfg.HTTP[0].MaxAttempts != 3 {
				t.Errorf("http: %+v", cfg.HTTP)
			}
			if len(cfg.Exec) != 1 || cfg.Exec[0].Command[1] != "filestore.py" {
				t.Errorf("exec: %+v", cfg.Exec)
			}
			if !cfg.Terraform.Disabled {
				t.Error("terraform not disabled")
			}
		}},
		{name: "json", file: `{"http":[{"name":"dns","endpoint":"http://h/","secretFile":"s"}]}`,
			check: func(t *testing.T, cfg builtin.Config) {
				if len(cfg.HTTP) != 1 || cfg.HTTP[0].Endpoint != "http://h/" {
					t.Errorf("http: %+v", cfg.HTTP)
				}
			}},
		{name: "empty", file: "\n", check: func(t *testing.T, cfg builtin.Config) {
			if len(cfg.HTTP)+len(cfg.Exec) != 0 {
				t.Errorf("empty file gave %+v", cfg)
			}
		}},
		{name: "misspelt key", file: "htp: []\n", wantErr: "htp"},
		{name: "missing secret file", file: "http:\n  - name: dns\n    endpoint: http://h/\n", wantErr: "http[0] needs name, endpoint and secretFile"},
		{name: "exec without command", file: "exec:\n  - name: x\n", wantErr: "exec[0] needs name and command"},
		{name: "bad duration", file: "http:\n  - {name: a, endpoint: 'http://h/', secretFile: s, timeout: soon}\n", wantErr: "invalid duration \"soon\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "plugins.yaml")
			if err := os.WriteFile(path, []byte(tt.file), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := builtin.Load(path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one naming %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, cfg)
		})
	}
	if _, err := builtin.Load(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("a missing file loaded")
	}
}
