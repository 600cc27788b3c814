package services

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"cairn/commands"
	"cairn/domain"
	"cairn/domain/ocl"
	"cairn/domain/service"
)

// PluginTypes says which plugin types change their resources in place (see
// plugins.Registry.UpdatesInPlace); an update replaces the others.
type PluginTypes interface {
	UpdatesInPlace(plugin, typ string) bool
}

// UpdatesInPlace has update plans say update or replace as the plugins
// will; without it every changed resource is planned as replaced.
func (h *Handlers) UpdatesInPlace(types PluginTypes) { h.types = types }

// Update moves a service to another version of its template, or other
// variables. Variables left out keep their current value (JSON null puts
// one back to its default); a version left out is the current one.
type Update struct {
	ServiceID       string                     `json:"serviceId"`
	TemplateVersion string                     `json:"templateVersion,omitempty"`
	Variables       map[string]json.RawMessage `json:"variables,omitempty"`
}

// VariableChange is one variable an update changes, masked when sensitive.
type VariableChange struct {
	Name string          `json:"name"`
	Old  json.RawMessage `json:"old,omitempty"`
	New  json.RawMessage `json:"new,omitempty"`
}

// UpdatePlan is what an update would do, before it is applied.
type UpdatePlan struct {
	ServiceID    string
	ServiceName  string
	Revision     int // the revision the service is at
	FromVersion  string
	ToVersion    string
	Variables    []VariableChange
	Changes      []ocl.Change // every instance, kept ones included
	NoChange     bool         // the update would change nothing
	planned      *ocl.Graph
	recordedVars json.RawMessage
}

// Counts tallies the changes by action.
func (p UpdatePlan) Counts() map[ocl.Action]int {
	out := map[ocl.Action]int{}
	for _, c := range p.Changes {
		out[c.Action]++
	}
	return out
}

// PlanUpdate works out what an update would do and changes nothing.
func (h *Handlers) PlanUpdate(ctx context.Context, in Update) (UpdatePlan, error) {
	if err := commands.RequireID("serviceId", in.ServiceID); err != nil {
		return UpdatePlan{}, err
	}
	s, _, err := commands.Load[service.Service](ctx, h.store, domain.ServiceStream, in.ServiceID)
	if err != nil {
		return UpdatePlan{}, err
	}
	if !s.Exists() {
		return UpdatePlan{}, &domain.NotFoundError{Entity: "service", ID: in.ServiceID}
	}
	return h.planUpdate(ctx, s, in)
}

func (h *Handlers) planUpdate(ctx context.Context, s service.Service, in Update) (UpdatePlan, error) {
	version := in.TemplateVersion
	if version == "" {
		version = s.TemplateVersion
	}
	oldTV, err := h.template(ctx, s.TemplateName, s.TemplateVersion)
	if err != nil {
		return UpdatePlan{}, err
	}
	oldDesc, err := parseRecorded(oldTV)
	if err != nil {
		return UpdatePlan{}, err
	}
	newDesc := oldDesc
	if version != s.TemplateVersion {
		// Moving to another version needs it published; staying on a
		// deprecated one to change a variable is fine.
		if newDesc, err = h.deployable(ctx, s.TemplateName, version); err != nil {
			return UpdatePlan{}, err
		}
	}
	current, err := h.secrets.Decrypt(s.ID, s.Variables, oldDesc.SensitiveVariables())
	if err != nil {
		return UpdatePlan{}, err
	}
	merged := map[string]json.RawMessage{}
	for name, v := range current {
		if _, declared := newDesc.Variables[name]; declared {
			merged[name] = v
		}
	}
	maps.Copy(merged, in.Variables)
	vars, err := newDesc.ResolveVariables("", merged)
	if err != nil {
		return UpdatePlan{}, err
	}
	svcCtx := ocl.ServiceContext{ID: s.ID, Tenant: s.TenantID}
	oldVars, err := oldDesc.ResolveVariables("", current)
	if err != nil {
		return UpdatePlan{}, fmt.Errorf("the service's recorded variables no longer resolve: %w", err)
	}
	from, err := oldDesc.Plan(oldVars, svcCtx)
	if err != nil {
		return UpdatePlan{}, fmt.Errorf("the service's current revision no longer plans: %w", err)
	}
	to, err := newDesc.Plan(vars, svcCtx)
	if err != nil {
		return UpdatePlan{}, err
	}
	inPlace := func(string, string) bool { return false }
	if h.types != nil {
		inPlace = h.types.UpdatesInPlace
	}
	p := UpdatePlan{ServiceID: s.ID, ServiceName: s.Name, Revision: s.Revision, FromVersion: s.TemplateVersion, ToVersion: version,
		Changes: ocl.Diff(from, to, inPlace), planned: to}
	sensitive := newDesc.SensitiveVariables()
	for _, name := range slices.Sorted(maps.Keys(vars)) {
		old, now := oldVars[name], vars[name]
		if sameValue(old, now) {
			continue
		}
		c := VariableChange{Name: name, Old: old, New: now}
		if slices.Contains(sensitive, name) || slices.Contains(oldDesc.SensitiveVariables(), name) {
			c.Old, c.New = maskedIf(old), maskedIf(now)
		}
		p.Variables = append(p.Variables, c)
	}
	for _, name := range slices.Sorted(maps.Keys(oldVars)) {
		if _, kept := vars[name]; !kept {
			c := VariableChange{Name: name, Old: oldVars[name]}
			if slices.Contains(oldDesc.SensitiveVariables(), name) {
				c.Old = maskedIf(c.Old)
			}
			p.Variables = append(p.Variables, c)
		}
	}
	p.NoChange = version == s.TemplateVersion && len(p.Variables) == 0
	sealed, err := h.secrets.SealSensitive(s.ID, vars, sensitive)
	if err != nil {
		return UpdatePlan{}, err
	}
	if p.recordedVars, err = json.Marshal(sealed); err != nil {
		return UpdatePlan{}, fmt.Errorf("encode variables: %w", err)
	}
	return p, nil
}

func sameValue(a, b json.RawMessage) bool {
	return string(domain.CanonicalJSON(a)) == string(domain.CanonicalJSON(b))
}

func maskedIf(v json.RawMessage) json.RawMessage {
	if len(v) == 0 {
		return nil
	}
	return json.RawMessage(ocl.Masked)
}

// Update plans the update as PlanUpdate does and records it; the
// orchestrator applies it. An update that changes nothing records nothing.
func (h *Handlers) Update(ctx context.Context, meta commands.Meta, in Update) (commands.Outcome, UpdatePlan, error) {
	if err := commands.RequireID("serviceId", in.ServiceID); err != nil {
		return commands.Outcome{}, UpdatePlan{}, err
	}
	s, _, err := commands.Load[service.Service](ctx, h.store, domain.ServiceStream, in.ServiceID)
	if err != nil {
		return commands.Outcome{}, UpdatePlan{}, err
	}
	if !s.Exists() {
		return commands.Outcome{}, UpdatePlan{}, &domain.NotFoundError{Entity: "service", ID: in.ServiceID}
	}
	p, err := h.planUpdate(ctx, s, in)
	if err != nil {
		return commands.Outcome{}, UpdatePlan{}, err
	}
	if h.capacity != nil && !p.NoChange {
		if err := h.capacity.CheckPlan(ctx, p.planned, s.ID, s.TemplateName); err != nil {
			return commands.Outcome{}, UpdatePlan{}, err
		}
	}
	var resources []string
	for _, n := range p.planned.Nodes() {
		resources = append(resources, n.ResourceID)
	}
	given, err := json.Marshal(in.Variables)
	if err != nil {
		return commands.Outcome{}, UpdatePlan{}, fmt.Errorf("encode variables: %w", err)
	}
	// As at registration, the log keeps a keyed hash of the values given.
	fingerprint := in
	fingerprint.Variables = map[string]json.RawMessage{"(keyed hash)": mustJSON(h.secrets.MAC(given))}
	out, err := h.run(ctx, inTenant(meta, s.TenantID), s.ID, fingerprint, func(cur service.Service, at time.Time) ([]domain.Event, error) {
		if p.NoChange && cur.Revision == s.Revision {
			return nil, nil
		}
		if cur.Revision != s.Revision || cur.Status != s.Status {
			// Changed under us (another update, a repair): plan again.
			return nil, &domain.StateError{Entity: "service", ID: s.ID, Command: "update",
				State: fmt.Sprintf("%s at revision %d now (it changed while the update was planned; plan it again)", cur.Status, cur.Revision)}
		}
		return cur.Update(service.Update{ServiceID: s.ID, TemplateVersion: p.ToVersion, Variables: p.recordedVars, ResourceIDs: resources, At: at})
	})
	return out, p, err
}
