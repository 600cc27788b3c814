// Package sal is the System Abstraction Layer: the node-level API through which
// cairn-agent executes jobs. It reads system facts and statistics, lists and
// controls processes, runs commands and scripts with streamed output, supervises
// long-running processes, touches files only inside configured roots, and
// checks the network.
//
// Everything hangs off a System built by New; it holds no package-level
// mutable state, so several Systems (e.g. in tests) do not interfere. The
// action catalogue (names and argument schemas) lives in the dependency-free
// package sal/catalog so the control plane can validate jobs with it too.
//
// Process control relies on process groups and POSIX signals: sal targets Linux
// and other Unix systems.
package sal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"cairn/sal/catalog"
)

// ErrInvalidSpec marks a request that cannot be carried out as given (an empty
// argv, an unknown interpreter, a malformed environment name...). Errors that
// wrap it describe what to change.
var ErrInvalidSpec = errors.New("invalid specification")

// Config says what a System may touch and its defaults.
type Config struct {
	// FileRoots are the directories that file operations and process output
	// files are confined to. Each must exist. With none, every path is refused.
	FileRoots []string
	// ScriptDir is where RunScript writes script bodies before running them.
	// Empty means the system's temporary directory.
	ScriptDir string
	// WorkDir is the working directory of commands whose spec names none.
	// Empty means the agent's own working directory.
	WorkDir string
	// KillGrace is the default time between SIGTERM and SIGKILL when a command
	// is stopped. Zero means 5 seconds.
	KillGrace time.Duration
	// MaxReadBytes is the default and upper limit for ReadFile. Zero means 1 MiB;
	// it cannot exceed catalog.MaxReadBytes.
	MaxReadBytes int64
}

// System is the node-level API. Build it with New; it is safe for concurrent use.
type System struct {
	roots        []string // absolute, symlink-free, cleaned
	scriptDir    string
	workDir      string
	killGrace    time.Duration
	maxReadBytes int64

	validator  *catalog.Validator
	handlers   map[string]Handler
	supervisor *Supervisor

	cpuMu   sync.Mutex
	lastCPU cpuSample
}

const (
	defaultKillGrace    = 5 * time.Second
	defaultMaxReadBytes = 1 << 20
)

// New validates cfg, resolves the file roots and compiles the action schemas.
func New(cfg Config) (*System, error) {
	s := &System{
		scriptDir:    cfg.ScriptDir,
		workDir:      cfg.WorkDir,
		killGrace:    cfg.KillGrace,
		maxReadBytes: cfg.MaxReadBytes,
	}
	if s.killGrace <= 0 {
		s.killGrace = defaultKillGrace
	}
	if s.maxReadBytes <= 0 {
		s.maxReadBytes = defaultMaxReadBytes
	}
	if s.maxReadBytes > catalog.MaxReadBytes {
		return nil, fmt.Errorf("sal: MaxReadBytes %d exceeds the limit of %d", s.maxReadBytes, catalog.MaxReadBytes)
	}
	if s.scriptDir == "" {
		s.scriptDir = os.TempDir()
	}
	for _, r := range cfg.FileRoots {
		resolved, err := resolveRoot(r)
		if err != nil {
			return nil, err
		}
		s.roots = append(s.roots, resolved)
	}

	v, err := catalog.NewValidator()
	if err != nil {
		return nil, fmt.Errorf("sal: %w", err)
	}
	s.validator = v
	s.supervisor = newSupervisor(s)
	s.handlers = s.actionHandlers()
	// A schema without handler (or the reverse) is a programming error that
	// would otherwise surface only when a job names the action.
	schemas := catalog.ActionSchemas()
	for name := range schemas {
		if _, ok := s.handlers[name]; !ok {
			return nil, fmt.Errorf("sal: action %s has a schema but no handler", name)
		}
	}
	for name := range s.handlers {
		if _, ok := schemas[name]; !ok {
			return nil, fmt.Errorf("sal: action %s has a handler but no schema", name)
		}
	}
	return s, nil
}

// Roots returns the resolved file roots.
func (s *System) Roots() []string {
	return append([]string(nil), s.roots...)
}

// Supervisor returns the System's process supervisor.
func (s *System) Supervisor() *Supervisor {
	return s.supervisor
}

func resolveRoot(r string) (string, error) {
	if r == "" {
		return "", fmt.Errorf("sal: file root is empty")
	}
	abs, err := filepath.Abs(r)
	if err != nil {
		return "", fmt.Errorf("sal: file root %q: %w", r, err)
	}
	// Compare against the real location, so a root reached through a symlink
	// (as /tmp is on some systems) still contains its own files.
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("sal: file root %q must exist: %w", r, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("sal: file root %q: %w", r, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("sal: file root %q is not a directory", r)
	}
	return filepath.Clean(real), nil
}
