package tfprovider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"

	"cairn/eventstore"
	"cairn/graph/client"
)

// API is the provider's connection to Cairn, shared by every resource.
//
// It reads its own writes: Cairn's read models apply a write a moment after
// the mutation returns, so a data source read right after the resource it
// depends on was created could miss it. The API keeps the cursor of the
// latest write it made (every mutation selects its cursor), and a query
// that declares $cw gets it as its consistentWith.
type API struct {
	client  *client.Client
	timeout time.Duration

	mu      sync.Mutex
	written eventstore.Cursor
}

// Do runs one GraphQL operation within the request timeout.
func (a *API) Do(ctx context.Context, query string, vars map[string]any, out any) error {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	if strings.Contains(query, "$cw") {
		if _, given := vars["cw"]; !given {
			vars = withVar(vars, "cw", a.lastWrite())
		}
	}
	if !strings.HasPrefix(strings.TrimSpace(query), "mutation") {
		return a.client.Do(ctx, query, vars, out)
	}
	var data json.RawMessage
	if err := a.client.Do(ctx, query, vars, &data); err != nil {
		return err
	}
	if err := a.noteWrite(data); err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

// lastWrite is the cursor of the latest write, nil before the first.
func (a *API) lastWrite() any {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.written.IsZero() {
		return nil
	}
	return a.written.String()
}

// noteWrite keeps the highest cursor among a mutation's payloads.
func (a *API) noteWrite(data json.RawMessage) error {
	var payloads map[string]*struct{ Cursor string }
	if err := json.Unmarshal(data, &payloads); err != nil {
		return fmt.Errorf("decode the mutation's answer: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, p := range payloads {
		if p == nil || p.Cursor == "" {
			continue
		}
		c, err := eventstore.ParseCursor(p.Cursor)
		if err != nil {
			return fmt.Errorf("the mutation answered a cursor this provider cannot read: %w", err)
		}
		if a.written.Less(c) {
			a.written = c
		}
	}
	return nil
}

// withVar is vars with one more variable, leaving the caller's map alone.
func withVar(vars map[string]any, name string, value any) map[string]any {
	out := make(map[string]any, len(vars)+1)
	for k, v := range vars {
		out[k] = v
	}
	out[name] = value
	return out
}

// apiFrom takes the API a resource or data source was configured with.
func apiFrom(data any, diags *diag.Diagnostics) *API {
	if data == nil {
		return nil // not configured yet (validation)
	}
	api, ok := data.(*API)
	if !ok {
		diags.AddError("Unexpected provider data", fmt.Sprintf("expected *tfprovider.API, got %T", data))
	}
	return api
}

// configured is embedded by every resource: it keeps the API.
type configured struct{ api *API }

func (c *configured) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	c.api = apiFrom(req.ProviderData, &resp.Diagnostics)
}

// configuredSource is configured for data sources.
type configuredSource struct{ api *API }

func (c *configuredSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	c.api = apiFrom(req.ProviderData, &resp.Diagnostics)
}

// fieldPaths maps the API's input field names to the resource's
// attributes, for errors that name a field.
type fieldPaths map[string]path.Path

// addAPIError reports an error from Cairn as a diagnostic: on the attribute
// the error's field names when it names one (a validation error's path),
// with the error's code (INVALID_INPUT, CONFLICT, FORBIDDEN, NOT_FOUND) in
// the summary.
func addAPIError(diags *diag.Diagnostics, what string, err error, fields fieldPaths) {
	var errs client.Errors
	if !errors.As(err, &errs) || len(errs) == 0 {
		diags.AddError("Cannot "+what, err.Error())
		return
	}
	for _, e := range errs {
		summary := "Cannot " + what
		if c := e.Code(); c != "" {
			summary += " (" + c + ")"
		}
		field, _ := e.Extensions["field"].(string)
		if p, ok := attributeOf(field, fields); ok {
			diags.AddAttributeError(p, summary, e.Message)
			continue
		}
		diags.AddError(summary, e.Message)
	}
}

// attributeOf finds the attribute of an API field: the field itself, or its
// first part with the rest as a map key (variables.port → variables["port"]).
func attributeOf(field string, fields fieldPaths) (path.Path, bool) {
	if field == "" {
		return path.Path{}, false
	}
	if p, ok := fields[field]; ok {
		return p, true
	}
	head, key, found := strings.Cut(field, ".")
	if p, ok := fields[head]; ok && found {
		return p.AtMapKey(key), true
	}
	return path.Path{}, false
}

// isNotFound reports an API error saying the object does not exist.
func isNotFound(err error) bool {
	var errs client.Errors
	return errors.As(err, &errs) && errs.Code() == "NOT_FOUND"
}
