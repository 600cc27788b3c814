package plugins

import (
	"context"
	"encoding/json"
)

// ByOp is a Plugin that serves every lifecycle call with one function: what
// plugins that forward each call elsewhere (the http and exec plugins) share.
type ByOp struct {
	Types []ResourceType
	Call  func(ctx context.Context, op Op, r Request) (json.RawMessage, error)
}

var _ Plugin = ByOp{}

// ResourceTypes implements Plugin.
func (b ByOp) ResourceTypes() []ResourceType { return b.Types }

// Create implements Plugin.
func (b ByOp) Create(ctx context.Context, r Request) (json.RawMessage, error) {
	return b.Call(ctx, OpCreate, r)
}

// Start implements Plugin.
func (b ByOp) Start(ctx context.Context, r Request) (json.RawMessage, error) {
	return b.Call(ctx, OpStart, r)
}

// Stop implements Plugin.
func (b ByOp) Stop(ctx context.Context, r Request) (json.RawMessage, error) {
	return b.Call(ctx, OpStop, r)
}

// Update implements Plugin.
func (b ByOp) Update(ctx context.Context, r Request) (json.RawMessage, error) {
	return b.Call(ctx, OpUpdate, r)
}

// Destroy implements Plugin.
func (b ByOp) Destroy(ctx context.Context, r Request) (json.RawMessage, error) {
	return b.Call(ctx, OpDestroy, r)
}

// Observe implements Plugin.
func (b ByOp) Observe(ctx context.Context, r Request) (json.RawMessage, error) {
	return b.Call(ctx, OpObserve, r)
}
