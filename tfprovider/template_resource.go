package tfprovider

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// A template version is immutable: a changed descriptor is a new version,
// so every change replaces the resource. Destroying it deprecates the
// version (the log keeps it; services deployed from it keep running).
type templateResource struct{ configured }

func newTemplateResource() resource.Resource { return &templateResource{} }

var (
	_ resource.ResourceWithConfigure   = (*templateResource)(nil)
	_ resource.ResourceWithImportState = (*templateResource)(nil)
)

type templateModel struct {
	ID         types.String `tfsdk:"id"`
	Descriptor types.String `tfsdk:"descriptor"`
	Publish    types.Bool   `tfsdk:"publish"`
	Name       types.String `tfsdk:"name"`
	Version    types.String `tfsdk:"version"`
	Status     types.String `tfsdk:"status"`
}

type templateView struct {
	ID, Name, Version, Status, Vendor string
	Category, Description             *string
	Variables                         []struct {
		Name, Type  string
		Sensitive   bool
		Description *string
	}
}

const templateViewFields = `id name version status vendor category description variables { name type sensitive description }`

func (a *API) template(ctx context.Context, name, version string) (*templateView, error) {
	var out struct{ Template *templateView }
	err := a.Do(ctx, `query($n: String!, $v: String!, $cw: Cursor) { template(name: $n, version: $v, consistentWith: $cw) { `+templateViewFields+` } }`,
		map[string]any{"n": name, "v": version}, &out)
	return out.Template, err
}

func (r *templateResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_template"
}

func (r *templateResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "A template version in the catalog, registered from a service descriptor (JSON or YAML, e.g. file(\"service.yaml\")). Versions are immutable: a changed descriptor must carry a new version, and replaces this one.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, Description: "NAME@VERSION.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"descriptor": schema.StringAttribute{Required: true, Description: "The service descriptor's text.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()}},
			"publish": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(true),
				PlanModifiers: []planmodifier.Bool{boolplanmodifier.RequiresReplace()},
				Description:   "Publish the version once validated, so that tenants can deploy it (default true)."},
			"name": schema.StringAttribute{Computed: true, Description: "The template's name, from the descriptor.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"version": schema.StringAttribute{Computed: true, Description: "The version, from the descriptor.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"status": schema.StringAttribute{Computed: true, Description: "VALIDATED, PUBLISHED or DEPRECATED."},
		},
	}
}

func (r *templateResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m templateModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var out struct {
		RegisterTemplate struct{ Template templateView }
	}
	if err := r.api.Do(ctx, `mutation($d: String!) { registerTemplate(input: {descriptor: $d}) { template { `+templateViewFields+` } cursor } }`,
		map[string]any{"d": m.Descriptor.ValueString()}, &out); err != nil {
		addAPIError(&resp.Diagnostics, "register the template", err, fieldPaths{"descriptor": path.Root("descriptor")})
		return
	}
	t := out.RegisterTemplate.Template
	if m.Publish.ValueBool() && t.Status != "PUBLISHED" {
		var pub struct {
			PublishTemplate struct{ Template templateView }
		}
		if err := r.api.Do(ctx, `mutation($n: String!, $v: String!) { publishTemplate(input: {name: $n, version: $v}) { template { `+templateViewFields+` } cursor } }`,
			map[string]any{"n": t.Name, "v": t.Version}, &pub); err != nil {
			addAPIError(&resp.Diagnostics, "publish the template", err, nil)
			return
		}
		t = pub.PublishTemplate.Template
	}
	m.fill(t)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (m *templateModel) fill(t templateView) {
	m.ID = types.StringValue(t.Name + "@" + t.Version)
	m.Name, m.Version, m.Status = types.StringValue(t.Name), types.StringValue(t.Version), types.StringValue(t.Status)
}

func (r *templateResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m templateModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	t, err := r.api.template(ctx, m.Name.ValueString(), m.Version.ValueString())
	if err != nil {
		addAPIError(&resp.Diagnostics, "read the template", err, nil)
		return
	}
	if t == nil {
		resp.State.RemoveResource(ctx)
		return
	}
	if m.Descriptor.IsNull() {
		// Imported: the descriptor comes back as the catalog keeps it.
		var d struct {
			Template struct{ Descriptor json.RawMessage }
		}
		if err := r.api.Do(ctx, `query($n: String!, $v: String!, $cw: Cursor) { template(name: $n, version: $v, consistentWith: $cw) { descriptor } }`,
			map[string]any{"n": t.Name, "v": t.Version}, &d); err == nil {
			m.Descriptor = types.StringValue(string(d.Template.Descriptor))
		}
		m.Publish = types.BoolValue(t.Status == "PUBLISHED")
	}
	m.fill(*t)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *templateResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	// Every attribute replaces; nothing changes in place.
	var m templateModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *templateResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var m templateModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || m.Status.ValueString() != "PUBLISHED" {
		return
	}
	err := r.api.Do(ctx, `mutation($n: String!, $v: String!) { deprecateTemplate(input: {name: $n, version: $v, reason: "destroyed by Terraform"}) { cursor } }`,
		map[string]any{"n": m.Name.ValueString(), "v": m.Version.ValueString()}, nil)
	if err != nil && !isNotFound(err) {
		addAPIError(&resp.Diagnostics, "deprecate the template", err, nil)
	}
}

// ImportState takes NAME@VERSION.
func (r *templateResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	name, version, ok := cutVersion(req.ID)
	if !ok {
		resp.Diagnostics.AddError("Cannot import the template", fmt.Sprintf("%q: give NAME@VERSION", req.ID))
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("name"), name)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("version"), version)...)
}

func cutVersion(id string) (string, string, bool) {
	for i := len(id) - 1; i > 0; i-- {
		if id[i] == '@' {
			return id[:i], id[i+1:], i+1 < len(id)
		}
	}
	return "", "", false
}
