package tfprovider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// A tenant is renamed in place; destroying it suspends it (tenants stay in
// the log, with their history).
type tenantResource struct{ configured }

func newTenantResource() resource.Resource { return &tenantResource{} }

var (
	_ resource.ResourceWithConfigure   = (*tenantResource)(nil)
	_ resource.ResourceWithImportState = (*tenantResource)(nil)
)

type tenantModel struct {
	ID     types.String `tfsdk:"id"`
	Name   types.String `tfsdk:"name"`
	Status types.String `tfsdk:"status"`
}

const tenantFields = `id name status`

func (r *tenantResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_tenant"
}

func (r *tenantResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "A tenant. Destroying it suspends it: its history stays.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Optional: true, Computed: true, Description: "The tenant's id; chosen by Cairn when left out.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace(), stringplanmodifier.UseStateForUnknown()}},
			"name":   schema.StringAttribute{Required: true, Description: "The tenant's name; renamed in place."},
			"status": schema.StringAttribute{Computed: true, Description: "ACTIVE or SUSPENDED."},
		},
	}
}

type tenantView struct{ ID, Name, Status string }

func (m *tenantModel) fill(t tenantView) {
	m.ID, m.Name, m.Status = types.StringValue(t.ID), types.StringValue(t.Name), types.StringValue(t.Status)
}

var tenantInputFields = fieldPaths{"id": path.Root("id"), "tenantId": path.Root("id"), "name": path.Root("name")}

func (r *tenantResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m tenantModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	in := map[string]any{"name": m.Name.ValueString()}
	if v := m.ID.ValueString(); v != "" {
		in["id"] = v
	}
	var out struct{ CreateTenant struct{ Tenant tenantView } }
	if err := r.api.Do(ctx, `mutation($in: CreateTenantInput!) { createTenant(input: $in) { tenant { `+tenantFields+` } cursor } }`, map[string]any{"in": in}, &out); err != nil {
		addAPIError(&resp.Diagnostics, "create the tenant", err, tenantInputFields)
		return
	}
	m.fill(out.CreateTenant.Tenant)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *tenantResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m tenantModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	var out struct{ Tenant *tenantView }
	if err := r.api.Do(ctx, `query($id: ID!, $cw: Cursor) { tenant(id: $id, consistentWith: $cw) { `+tenantFields+` } }`, map[string]any{"id": m.ID.ValueString()}, &out); err != nil {
		addAPIError(&resp.Diagnostics, "read the tenant", err, nil)
		return
	}
	if out.Tenant == nil {
		resp.State.RemoveResource(ctx)
		return
	}
	m.fill(*out.Tenant)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *tenantResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m tenantModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var out struct{ RenameTenant struct{ Tenant tenantView } }
	if err := r.api.Do(ctx, `mutation($id: ID!, $n: String!) { renameTenant(input: {tenantId: $id, name: $n}) { tenant { `+tenantFields+` } cursor } }`,
		map[string]any{"id": m.ID.ValueString(), "n": m.Name.ValueString()}, &out); err != nil {
		addAPIError(&resp.Diagnostics, "rename the tenant", err, tenantInputFields)
		return
	}
	m.fill(out.RenameTenant.Tenant)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *tenantResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var m tenantModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if m.Status.ValueString() == "SUSPENDED" {
		return
	}
	err := r.api.Do(ctx, `mutation($id: ID!) { suspendTenant(input: {tenantId: $id, reason: "destroyed by Terraform"}) { cursor } }`,
		map[string]any{"id": m.ID.ValueString()}, nil)
	if err != nil && !isNotFound(err) {
		addAPIError(&resp.Diagnostics, "suspend the tenant", err, nil)
	}
}

func (r *tenantResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resource.ImportStatePassthroughID(ctx, path.Root("id"), req, resp)
}
