// Package blueprints applies a blueprint: it makes a tenant's services match
// the file, through the services' own commands (register, update, start,
// stop, remove). Every declared service is checked before any command is
// recorded, so a file with a mistake changes nothing; a service already as
// declared gets no command, so applying the same file twice records nothing
// the second time.
package blueprints

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"cairn/commands"
	"cairn/commands/services"
	"cairn/domain"
	"cairn/domain/blueprint"
	"cairn/domain/ocl"
	"cairn/domain/service"
	"cairn/domain/template"
	"cairn/eventstore"
	"cairn/projections/readmodel"
)

// Catalog finds the newest published version of a template, for services
// declared without a version.
type Catalog interface {
	ListTemplates(ctx context.Context, f readmodel.TemplateFilter, p readmodel.Page) (readmodel.Connection[readmodel.Template], error)
}

// Services lists a tenant's services, to find those declared by name and
// those a blueprint declared before (for prune).
type Services interface {
	ListServices(ctx context.Context, f readmodel.ServiceFilter, p readmodel.Page) (readmodel.Connection[readmodel.Service], error)
}

// Handlers apply blueprints.
type Handlers struct {
	store    commands.Store
	services *services.Handlers
	catalog  Catalog
	list     Services
}

// NewHandlers returns blueprint handlers acting through the services'
// handlers.
func NewHandlers(store commands.Store, svc *services.Handlers, catalog Catalog, list Services) *Handlers {
	return &Handlers{store: store, services: svc, catalog: catalog, list: list}
}

// Apply is a blueprint to apply (or, with DryRun, to plan).
type Apply struct {
	// Document is the blueprint, YAML or JSON.
	Document []byte
	// TenantID is the tenant when the file names none (and must match it
	// when it does); tenant users' own tenant.
	TenantID string
	// Prune removes the services the blueprint declared before and no
	// longer does (stopping them first).
	Prune  bool
	DryRun bool
}

// Change is what applying did (or would do) to one service.
type Change struct {
	Service   string           // its name
	ServiceID string           // its id ("" until created)
	Path      string           // where it is declared in the file ("" for a pruned one)
	Steps     []blueprint.Step // in order
	// Detail says more: the update's plan in counts, why a step waits.
	Detail string
}

// Result is the outcome of an apply or a plan.
type Result struct {
	Blueprint string
	TenantID  string
	Changes   []Change
	// Cursor is the last write's (zero when nothing was recorded).
	Cursor eventstore.Cursor
}

// Changed reports whether applying changes (or changed) anything.
func (r Result) Changed() bool {
	return slices.ContainsFunc(r.Changes, func(c Change) bool { return !slices.Equal(c.Steps, []blueprint.Step{blueprint.StepKeep}) })
}

// ServiceID is the id a blueprint gives a service it creates: derived from
// the tenant and the name, so two applies racing, or an apply right after
// another (before the read models show its services), address the same
// service.
func ServiceID(tenantID, name string) string {
	sum := sha256.Sum256([]byte("blueprint service\x00" + tenantID + "\x00" + name))
	return "bp" + hex.EncodeToString(sum[:12])
}

// planned is the decision for one declared service, with what carries it
// out.
type planned struct {
	change  Change
	decl    blueprint.Service
	version string
	id      string
	exists  bool
}

// Plan works out what applying would do and records nothing.
func (h *Handlers) Plan(ctx context.Context, in Apply) (Result, error) {
	in.DryRun = true
	return h.Apply(ctx, commands.Meta{}, in)
}

// Apply makes the tenant's services match the blueprint.
func (h *Handlers) Apply(ctx context.Context, meta commands.Meta, in Apply) (Result, error) {
	b, err := blueprint.Parse(in.Document)
	if err != nil {
		return Result{}, err
	}
	tenantID := b.Tenant
	switch {
	case tenantID == "":
		tenantID = in.TenantID
	case in.TenantID != "" && in.TenantID != tenantID:
		return Result{}, domain.Invalid("tenant", fmt.Sprintf("the blueprint is for tenant %q, and this apply is for %q", tenantID, in.TenantID))
	}
	if tenantID == "" {
		return Result{}, domain.Invalid("tenant", "name the tenant the blueprint is for (tenant: in the file)")
	}
	existing, err := h.tenantServices(ctx, tenantID)
	if err != nil {
		return Result{}, err
	}
	res := Result{Blueprint: b.Metadata.Name, TenantID: tenantID}
	var plans []planned
	var problems []ocl.Problem
	declared := map[string]bool{}
	for i, s := range b.Services {
		declared[s.Name] = true
		p, err := h.decide(ctx, b, tenantID, i, s, existing)
		if err != nil {
			problems = append(problems, problemsAt(blueprint.Path(i), err)...)
			continue
		}
		plans = append(plans, p)
	}
	if len(problems) > 0 {
		return Result{}, &ocl.ValidationError{Problems: problems}
	}
	for _, p := range plans {
		res.Changes = append(res.Changes, p.change)
	}
	var prune []readmodel.Service
	if in.Prune {
		for _, s := range existing {
			if s.Blueprint == b.Metadata.Name && !declared[s.Name] && s.Status != service.StatusRemoved && s.Status != service.StatusRemoving {
				prune = append(prune, s)
				res.Changes = append(res.Changes, Change{Service: s.Name, ServiceID: s.ID, Steps: []blueprint.Step{blueprint.StepRemove}})
			}
		}
	}
	if in.DryRun {
		return res, nil
	}
	meta = inTenant(meta, tenantID)
	for i, p := range plans {
		cursor, detail, err := h.carryOut(ctx, meta, b, tenantID, p)
		if err != nil {
			return res, fmt.Errorf("%s (%s): %w", p.change.Path, p.decl.Name, err)
		}
		if res.Cursor.Less(cursor) {
			res.Cursor = cursor
		}
		if detail != "" {
			res.Changes[i].Detail = detail
		}
		res.Changes[i].ServiceID = p.id
	}
	for _, s := range prune {
		out, err := h.services.Remove(ctx, meta, services.Remove{ServiceID: s.ID, Force: true})
		if err != nil {
			return res, fmt.Errorf("prune %s: %w", s.Name, err)
		}
		if res.Cursor.Less(out.Cursor) {
			res.Cursor = out.Cursor
		}
	}
	return res, nil
}

func inTenant(meta commands.Meta, tenantID string) commands.Meta {
	meta.Tenant = tenantID
	return meta
}

// tenantServices lists the tenant's services by name (removed ones left
// out, unless nothing else has the name).
func (h *Handlers) tenantServices(ctx context.Context, tenantID string) (map[string]readmodel.Service, error) {
	out := map[string]readmodel.Service{}
	page := readmodel.Page{First: 500}
	for {
		conn, err := h.list.ListServices(ctx, readmodel.ServiceFilter{TenantID: tenantID}, page)
		if err != nil {
			return nil, fmt.Errorf("list the tenant's services: %w", err)
		}
		for _, e := range conn.Edges {
			s := e.Node
			if prev, ok := out[s.Name]; ok && prev.Status != service.StatusRemoved {
				continue
			}
			out[s.Name] = s
		}
		if !conn.PageInfo.HasNextPage {
			return out, nil
		}
		page.After = conn.PageInfo.EndCursor
	}
}

// decide checks one declared service and decides its steps.
func (h *Handlers) decide(ctx context.Context, b *blueprint.Blueprint, tenantID string, i int, s blueprint.Service, existing map[string]readmodel.Service) (planned, error) {
	p := planned{decl: s, change: Change{Service: s.Name, Path: blueprint.Path(i)}}
	version, err := h.version(ctx, s)
	if err != nil {
		return p, err
	}
	p.version = version
	// The service is the one of that name, or (not in the read models yet)
	// the one an earlier apply created under the blueprint's id.
	p.id = ServiceID(tenantID, s.Name)
	var cur *blueprint.Existing
	if e, ok := existing[s.Name]; ok && e.Status != service.StatusRemoved {
		p.id = e.ID
	}
	svc, _, err := commands.Load[service.Service](ctx, h.store, domain.ServiceStream, p.id)
	if err != nil {
		return p, err
	}
	if svc.Exists() && svc.Status != service.StatusRemoved {
		p.exists = true
		if svc.TemplateName != s.Template {
			return p, domain.Invalid("template", fmt.Sprintf("service %s deploys %s, not %s: a service keeps its template (remove it, or give the new one another name)",
				s.Name, svc.TemplateName, s.Template))
		}
		plan, err := h.services.PlanUpdate(ctx, services.Update{ServiceID: p.id, TemplateVersion: version, Variables: s.Variables})
		if err != nil {
			return p, err
		}
		cur = &blueprint.Existing{ID: p.id, Name: s.Name, Status: string(svc.Status), Changed: !plan.NoChange}
		if !plan.NoChange {
			c := plan.Counts()
			p.change.Detail = fmt.Sprintf("revision %d → %d: %d to create, %d to update, %d to replace, %d to destroy",
				plan.Revision, max(svc.LastRevision, svc.Revision)+1, c[ocl.ActionCreate], c[ocl.ActionUpdate], c[ocl.ActionReplace], c[ocl.ActionDestroy])
		}
	} else {
		if svc.Exists() {
			// Removed: a new service of the name gets a fresh id.
			p.id = ServiceID(tenantID, s.Name+"\x00"+svc.ID)
		}
		if err := h.services.CheckRegister(ctx, p.id, h.registration(b, tenantID, p)); err != nil {
			return p, err
		}
	}
	p.change.Steps = blueprint.Decide(s, cur)
	if p.exists {
		p.change.ServiceID = p.id
	}
	return p, nil
}

func (h *Handlers) registration(b *blueprint.Blueprint, tenantID string, p planned) services.Register {
	return services.Register{ServiceID: p.id, TenantID: tenantID, Name: p.decl.Name, TemplateName: p.decl.Template,
		TemplateVersion: p.version, Flavor: p.decl.Flavor, Variables: p.decl.Variables, Blueprint: b.Metadata.Name, Start: p.decl.Runs()}
}

// version is the declared version, or the newest published one.
func (h *Handlers) version(ctx context.Context, s blueprint.Service) (string, error) {
	if s.Version != "" {
		return s.Version, nil
	}
	conn, err := h.catalog.ListTemplates(ctx, readmodel.TemplateFilter{Name: s.Template, Status: []template.Status{template.StatusPublished}, LatestOnly: true},
		readmodel.Page{First: 1})
	if err != nil {
		return "", err
	}
	if len(conn.Edges) == 0 {
		return "", domain.Invalid("template", fmt.Sprintf("template %q has no published version", s.Template))
	}
	return conn.Edges[0].Node.Version, nil
}

// carryOut records the commands of one service's steps and returns the
// cursor of the last.
func (h *Handlers) carryOut(ctx context.Context, meta commands.Meta, b *blueprint.Blueprint, tenantID string, p planned) (eventstore.Cursor, string, error) {
	var cursor eventstore.Cursor
	var detail string
	for _, step := range p.change.Steps {
		var out commands.Outcome
		var err error
		switch step {
		case blueprint.StepKeep:
			continue
		case blueprint.StepCreate:
			out, err = h.services.Register(ctx, meta, h.registration(b, tenantID, p))
		case blueprint.StepUpdate:
			out, _, err = h.services.Update(ctx, meta, services.Update{ServiceID: p.id, TemplateVersion: p.version, Variables: p.decl.Variables})
			if slices.Contains(p.change.Steps, blueprint.StepStart) {
				// The update takes the service back where it was; it can be
				// started once the update is done.
				detail = p.change.Detail + "; apply again to start it once updated"
				return out.Cursor, detail, err
			}
		case blueprint.StepStart:
			out, err = h.services.Start(ctx, meta, services.Start{ServiceID: p.id})
		case blueprint.StepStop:
			out, err = h.services.Stop(ctx, meta, services.Stop{ServiceID: p.id})
		}
		if err != nil {
			return cursor, detail, err
		}
		if cursor.Less(out.Cursor) {
			cursor = out.Cursor
		}
	}
	return cursor, detail, nil
}

// problemsAt puts an error about a declared service at its path in the
// file: a field of the service's command becomes the field of the file.
func problemsAt(path string, err error) []ocl.Problem {
	var ve *ocl.ValidationError
	if errors.As(err, &ve) {
		out := make([]ocl.Problem, len(ve.Problems))
		for i, p := range ve.Problems {
			out[i] = ocl.Problem{Path: join(path, fileField(p.Path)), Message: p.Message}
		}
		return out
	}
	var de *domain.ValidationError
	if errors.As(err, &de) {
		return []ocl.Problem{{Path: join(path, fileField(de.Field)), Message: de.Reason}}
	}
	var nf *domain.NotFoundError
	if errors.As(err, &nf) {
		return []ocl.Problem{{Path: join(path, map[string]string{"template": "version", "tenant": "tenant"}[nf.Entity]), Message: err.Error()}}
	}
	return []ocl.Problem{{Path: path, Message: err.Error()}}
}

// fileField names a command's field as the blueprint spells it.
func fileField(field string) string {
	for api, file := range map[string]string{"templateName": "template", "templateVersion": "version", "tenantId": "tenant"} {
		if field == api || strings.HasPrefix(field, api+".") {
			return file + strings.TrimPrefix(field, api)
		}
	}
	return field
}

func join(path, field string) string {
	if field == "" {
		return path
	}
	return path + "." + field
}

// The result as JSON, for the API and the CLI.
func (c Change) MarshalJSON() ([]byte, error) {
	type change struct {
		Service   string           `json:"service"`
		ServiceID string           `json:"serviceId,omitempty"`
		Path      string           `json:"path,omitempty"`
		Steps     []blueprint.Step `json:"steps"`
		Detail    string           `json:"detail,omitempty"`
	}
	return json.Marshal(change(c))
}
