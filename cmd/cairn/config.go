package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"cairn/graph/client"
	"cairn/internal/cliconfig"
)

// The environment variables that override the stored login.
const (
	ServerEnv = "CAIRN_SERVER"
	TokenEnv  = "CAIRN_TOKEN"
)

// config is what `cairn login` stores.
type config = cliconfig.Config

// NotLoggedInError is a command run with no server or token configured.
type NotLoggedInError struct{ Missing string }

func (e *NotLoggedInError) Error() string {
	return fmt.Sprintf("no %s configured: run `cairn login --server URL --token TOKEN`, or set %s and %s", e.Missing, ServerEnv, TokenEnv)
}

// configPath is where `cairn login` keeps its configuration.
func (a *app) configPath() (string, error) { return cliconfig.Path(a.getenv) }

// loadConfig reads the stored login (none is not an error) and applies the
// environment over it.
func (a *app) loadConfig() (config, error) {
	path, err := a.configPath()
	if err != nil {
		return config{}, err
	}
	c, err := cliconfig.Read(path)
	if err != nil {
		return c, err
	}
	if v := a.getenv(ServerEnv); v != "" {
		c.Server = v
	}
	if v := a.getenv(TokenEnv); v != "" {
		c.Token = v
	}
	return c, nil
}

// saveConfig writes the login readable by its owner only, replacing the file
// in one step so a reader never sees half of it.
func (a *app) saveConfig(c config) (string, error) {
	path, err := a.configPath()
	if err != nil {
		return "", err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, ".config-*.json")
	if err != nil {
		return "", fmt.Errorf("write the configuration in %s: %w", dir, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return "", fmt.Errorf("restrict %s: %w", tmp.Name(), err)
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return "", fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("replace %s: %w", path, err)
	}
	return path, nil
}

// normalizeServer accepts host:port or a URL and returns the URL.
func normalizeServer(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", errors.New("the server address is empty")
	}
	if !strings.HasPrefix(s, "http://") && !strings.HasPrefix(s, "https://") {
		if strings.Contains(s, "://") {
			return "", fmt.Errorf("server %q: use an http:// or https:// address", s)
		}
		s = "http://" + s
	}
	return strings.TrimSuffix(strings.TrimRight(s, "/"), "/graphql"), nil
}

// client returns an API client for the configured login.
func (a *app) client() (*client.Client, error) {
	c, err := a.loadConfig()
	if err != nil {
		return nil, err
	}
	if c.Server == "" {
		return nil, &NotLoggedInError{Missing: "server"}
	}
	if c.Token == "" {
		return nil, &NotLoggedInError{Missing: "token"}
	}
	server, err := normalizeServer(c.Server)
	if err != nil {
		return nil, err
	}
	return client.New(server, c.Token, a.http), nil
}
