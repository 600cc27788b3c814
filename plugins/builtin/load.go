package builtin

import (
	"bytes"
	"fmt"
	"os"

	"github.com/goccy/go-yaml"
)

// Load reads a plugins configuration file, YAML or JSON (JSON is YAML).
// Unknown keys are refused, so a misspelt setting is an error rather than a
// plugin silently left out.
func Load(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("plugins configuration: %w", err)
	}
	var cfg Config
	if len(bytes.TrimSpace(data)) == 0 {
		return cfg, nil
	}
	if err := yaml.UnmarshalWithOptions(data, &cfg, yaml.Strict()); err != nil {
		return Config{}, fmt.Errorf("plugins configuration %s: %s", path, yaml.FormatError(err, false, true))
	}
	for i, h := range cfg.HTTP {
		if h.Name == "" || h.Endpoint == "" || h.SecretFile == "" {
			return Config{}, fmt.Errorf("plugins configuration %s: http[%d] needs name, endpoint and secretFile", path, i)
		}
	}
	for i, x := range cfg.Exec {
		if x.Name == "" || len(x.Command) == 0 {
			return Config{}, fmt.Errorf("plugins configuration %s: exec[%d] needs name and command", path, i)
		}
	}
	return cfg, nil
}
