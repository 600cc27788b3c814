package tfprovider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// A user's name, role and tenant are fixed at creation; enabled toggles in
// place, and destroying it disables it.
type userResource struct{ configured }

func newUserResource() resource.Resource { return &userResource{} }

var (
	_ resource.ResourceWithConfigure   = (*userResource)(nil)
	_ resource.ResourceWithImportState = (*userResource)(nil)
)

type userModel struct {
	ID       types.String `tfsdk:"id"`
	Name     types.String `tfsdk:"name"`
	Role     types.String `tfsdk:"role"`
	TenantID types.String `tfsdk:"tenant_id"`
	Enabled  types.Bool   `tfsdk:"enabled"`
}

type userView struct {
	ID, Name, Role, Status string
	TenantID               *string
}

const userFields = `id name role tenantId status`

func (m *userModel) fill(u userView) {
	m.ID, m.Name, m.Role = types.StringValue(u.ID), types.StringValue(u.Name), types.StringValue(u.Role)
	m.TenantID = types.StringPointerValue(u.TenantID)
	m.Enabled = types.BoolValue(u.Status == "ACTIVE")
}

var userInputFields = fieldPaths{"id": path.Root("id"), "name": path.Root("name"), "role": path.Root("role"), "tenantId": path.Root("tenant_id")}

func (r *userResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_user"
}

func (r *userResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	resp.Schema = schema.Schema{
		Description: "A user: a person or a robot that holds API tokens. Destroying it disables it.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Optional: true, Computed: true, Description: "The user's id; chosen by Cairn when left out.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace(), stringplanmodifier.UseStateForUnknown()}},
			"name": schema.StringAttribute{Required: true, PlanModifiers: replace, Description: "The user's name."},
			"role": schema.StringAttribute{Required: true, PlanModifiers: replace,
				Description: "ADMIN, OPERATOR, TENANT_ADMIN, TENANT_MEMBER, VENDOR or AUDITOR."},
			"tenant_id": schema.StringAttribute{Optional: true, PlanModifiers: replace,
				Description: "The tenant of a tenant role; left out for the others."},
			"enabled": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(true),
				Description: "False disables the user (its tokens stop working) without forgetting it."},
		},
	}
}

func (r *userResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m userModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	in := map[string]any{"name": m.Name.ValueString(), "role": m.Role.ValueString(), "tenantId": m.TenantID.ValueStringPointer()}
	if v := m.ID.ValueString(); v != "" {
		in["id"] = v
	}
	var out struct{ CreateUser struct{ User userView } }
	if err := r.api.Do(ctx, `mutation($in: CreateUserInput!) { createUser(input: $in) { user { `+userFields+` } cursor } }`, map[string]any{"in": in}, &out); err != nil {
		addAPIError(&resp.Diagnostics, "create the user", err, userInputFields)
		return
	}
	enabled := m.Enabled.ValueBool()
	m.fill(out.CreateUser.User)
	if !enabled {
		r.setEnabled(ctx, &m, false, &resp.Diagnostics)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *userResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m userModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	var out struct{ User *userView }
	if err := r.api.Do(ctx, `query($id: ID!, $cw: Cursor) { user(id: $id, consistentWith: $cw) { `+userFields+` } }`, map[string]any{"id": m.ID.ValueString()}, &out); err != nil {
		addAPIError(&resp.Diagnostics, "read the user", err, nil)
		return
	}
	if out.User == nil {
		resp.State.RemoveResource(ctx)
		return
	}
	m.fill(*out.User)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *userResource) setEnabled(ctx context.Context, m *userModel, enabled bool, diags interface{ AddError(string, string) }) {
	q := `mutation($id: ID!) { enableUser(input: {userId: $id}) { user { ` + userFields + ` } cursor } }`
	if !enabled {
		q = `mutation($id: ID!) { disableUser(input: {userId: $id, reason: "disabled by Terraform"}) { user { ` + userFields + ` } cursor } }`
	}
	var out map[string]struct{ User userView }
	if err := r.api.Do(ctx, q, map[string]any{"id": m.ID.ValueString()}, &out); err != nil {
		diags.AddError("Cannot enable or disable the user", err.Error())
		return
	}
	for _, v := range out {
		m.fill(v.User)
	}
}

func (r *userResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m userModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	r.setEnabled(ctx, &m, m.Enabled.ValueBool(), &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *userResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var m userModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if m.Enabled.ValueBool() {
		r.setEnabled(ctx, &m, false, &resp.Diagnostics)
	}
}

func (r *userResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resource.ImportStatePassthroughID(ctx, path.Root("id"), req, resp)
}
