// Package local runs the agent plugin's SAL actions in-process on this
// machine, as one node: a single-machine setup (and tests) can use the agent
// plugin before any agent is enrolled. It lives apart from package agent so
// that the server links the node-level SAL code only when it asks for this.
package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

	"cairn/plugins"
	"cairn/plugins/agent"
	"cairn/sal"
)

// Runner implements agent.JobRunner on a sal.System, as node NodeID.
type Runner struct {
	System *sal.System
	NodeID string
}

// UnknownNodeError names a node this runner does not act for.
type UnknownNodeError struct{ Node, Local string }

func (e *UnknownNodeError) Error() string {
	return fmt.Sprintf("node %q is not reachable from here: this runner acts only for node %q", e.Node, e.Local)
}

// RunAction runs the action through the SAL. Errors saying that a path or a
// supervised process does not exist wrap plugins.ErrNotFound.
func (r Runner) RunAction(ctx context.Context, a agent.Action) (json.RawMessage, error) {
	if a.NodeID != r.NodeID {
		return nil, &UnknownNodeError{Node: a.NodeID, Local: r.NodeID}
	}
	out, err := r.System.Invoke(ctx, a.Action, a.Args)
	if err != nil && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, sal.ErrNotSupervised)) {
		return nil, fmt.Errorf("%w: %w", plugins.ErrNotFound, err)
	}
	return out, err
}
