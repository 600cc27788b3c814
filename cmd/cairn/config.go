package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"cairn/graph/client"
)

// The environment variables that override the stored login.
const (
	ServerEnv = "CAIRN_SERVER"
	TokenEnv  = "CAIRN_TOKEN"
)

// config is what `cairn login` stores.
type config struct {
	Server string `json:"server"`
	Token  string `json:"token"`
}

// NotLoggedInError is a command run with no server or token configured.
type NotLoggedInError struct{ Missing string }

func (e *NotLoggedInError) Error() string {
	return fmt.Sprintf("no %s configured: run `cairn login --server URL --token TOKEN`, or set %s and %s", e.Missing, ServerEnv, TokenEnv)
}

// configPath is $XDG_CONFIG_HOME/cairn/config.json, or
// ~/.config/cairn/config.json when XDG_CONFIG_HOME is unset.
func (a *app) configPath() (string, error) {
	if dir := a.getenv("XDG_CONFIG_HOME"); dir != "" {
		return filepath.Join(dir, "cairn", "config.json"), nil
	}
	home := a.getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("find the configuration directory: set XDG_CONFIG_HOME or HOME: %w", err)
		}
		home = h
	}
	return filepath.Join(home, ".config", "cairn", "config.json"), nil
}

// loadConfig reads the stored login (none is not an error) and applies the
// environment over it.
func (a *app) loadConfig() (config, error) {
	var c config
	path, err := a.configPath()
	if err != nil {
		return c, err
	}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return c, fmt.Errorf("read %s: %w", path, err)
	default:
		if err := json.Unmarshal(b, &c); err != nil {
			return c, fmt.Errorf("%s is not valid JSON (run `cairn login` again to rewrite it): %w", path, err)
		}
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
