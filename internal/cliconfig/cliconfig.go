// Package cliconfig is the file where `cairn login` keeps the server and
// token: the cairn CLI writes and reads it, and the Terraform provider falls
// back to it, so a person logged in once is logged in for both.
package cliconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Config is what `cairn login` stores.
type Config struct {
	Server string `json:"server"`
	Token  string `json:"token"`
}

// Path is $XDG_CONFIG_HOME/cairn/config.json, or ~/.config/cairn/config.json
// when XDG_CONFIG_HOME is unset; getenv reads the environment.
func Path(getenv func(string) string) (string, error) {
	if dir := getenv("XDG_CONFIG_HOME"); dir != "" {
		return filepath.Join(dir, "cairn", "config.json"), nil
	}
	home := getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("find the configuration directory: set XDG_CONFIG_HOME or HOME: %w", err)
		}
		home = h
	}
	return filepath.Join(home, ".config", "cairn", "config.json"), nil
}

// Read reads the stored login at path; a missing file is an empty Config.
func Read(path string) (Config, error) {
	var c Config
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return c, nil
	case err != nil:
		return c, fmt.Errorf("read %s: %w", path, err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("%s is not valid JSON (run `cairn login` again to rewrite it): %w", path, err)
	}
	return c, nil
}
