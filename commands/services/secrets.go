package services

import (
	"encoding/json"
	"fmt"
	"slices"

	"cairn/internal/seal"
)

// Secrets seals the values of sensitive variables before they are recorded
// and opens them for the orchestrator, which hands them to plugins only.
// Each value is bound to its service and variable name, so a sealed value
// copied into another service or variable does not open.
type Secrets struct {
	*seal.Sealer
}

// NewSecrets returns Secrets sealing with sealer's key.
func NewSecrets(sealer *seal.Sealer) *Secrets { return &Secrets{Sealer: sealer} }

func purpose(serviceID, name string) string {
	return "cairn service variable\x00" + serviceID + "\x00" + name
}

// SealVariable encrypts one variable's JSON value.
func (s *Secrets) SealVariable(serviceID, name string, value json.RawMessage) (json.RawMessage, error) {
	return s.Sealer.Seal(purpose(serviceID, name), value)
}

// OpenVariable decrypts a value SealVariable produced for the same service
// and variable.
func (s *Secrets) OpenVariable(serviceID, name string, value json.RawMessage) (json.RawMessage, error) {
	clear, err := s.Sealer.Open(purpose(serviceID, name), value)
	if err != nil {
		return nil, fmt.Errorf("variable %q of service %q: %w", name, serviceID, err)
	}
	return clear, nil
}

// SealSensitive returns vars with the values of the sensitive variables
// sealed. JSON null (an optional variable left out) holds no secret and
// stays null.
func (s *Secrets) SealSensitive(serviceID string, vars map[string]json.RawMessage, sensitive []string) (map[string]json.RawMessage, error) {
	out := make(map[string]json.RawMessage, len(vars))
	for name, v := range vars {
		if slices.Contains(sensitive, name) && string(v) != "null" {
			sv, err := s.SealVariable(serviceID, name, v)
			if err != nil {
				return nil, err
			}
			v = sv
		}
		out[name] = v
	}
	return out, nil
}

// Decrypt turns a service's recorded variables (a JSON object) back into
// clear values, opening those of the sensitive variables. Only the
// orchestrator calls it, to hand values to plugins; never log the result.
func (s *Secrets) Decrypt(serviceID string, recorded json.RawMessage, sensitive []string) (map[string]json.RawMessage, error) {
	vars := map[string]json.RawMessage{}
	if len(recorded) == 0 {
		return vars, nil
	}
	if err := json.Unmarshal(recorded, &vars); err != nil {
		return nil, fmt.Errorf("variables of service %q are not a JSON object: %w", serviceID, err)
	}
	for name, v := range vars {
		if !slices.Contains(sensitive, name) || string(v) == "null" {
			continue
		}
		clear, err := s.OpenVariable(serviceID, name, v)
		if err != nil {
			return nil, err
		}
		vars[name] = clear
	}
	return vars, nil
}
