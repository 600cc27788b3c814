package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"

	"cairn/domain/service"
)

// VariableDecoder recovers the variable values a service was registered
// with from what its registration recorded. Sensitive values are recorded
// encrypted, so the server passes the decoder that holds the key; values it
// returns reach plugins only and are never written to the log.
type VariableDecoder func(ctx context.Context, svc service.Service) (map[string]json.RawMessage, error)

// PlainVariables reads the recorded variables as plain JSON, for
// deployments whose descriptors declare no sensitive variable.
func PlainVariables(_ context.Context, svc service.Service) (map[string]json.RawMessage, error) {
	vars := map[string]json.RawMessage{}
	if len(svc.Variables) == 0 {
		return vars, nil
	}
	if err := json.Unmarshal(svc.Variables, &vars); err != nil {
		return nil, fmt.Errorf("the recorded variables are not a JSON object: %w", err)
	}
	return vars, nil
}
