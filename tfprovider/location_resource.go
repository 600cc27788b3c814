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

// A location is renamed and described in place; destroying it retires it.
type locationResource struct{ configured }

func newLocationResource() resource.Resource { return &locationResource{} }

var (
	_ resource.ResourceWithConfigure   = (*locationResource)(nil)
	_ resource.ResourceWithImportState = (*locationResource)(nil)
)

type locationModel struct {
	ID          types.String `tfsdk:"id"`
	Name        types.String `tfsdk:"name"`
	Description types.String `tfsdk:"description"`
	Status      types.String `tfsdk:"status"`
}

type locationView struct {
	ID, Name, Status string
	Description      *string
}

const locationFields = `id name description status`

func (m *locationModel) fill(l locationView) {
	m.ID, m.Name, m.Status = types.StringValue(l.ID), types.StringValue(l.Name), types.StringValue(l.Status)
	m.Description = types.StringPointerValue(l.Description)
	if l.Description != nil && *l.Description == "" {
		m.Description = types.StringNull()
	}
}

var locationInputFields = fieldPaths{"id": path.Root("id"), "name": path.Root("name"), "description": path.Root("description")}

func (r *locationResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_location"
}

func (r *locationResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "A location (a data centre, a region) nodes belong to. Destroying it retires it.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Optional: true, Computed: true, Description: "The location's id; chosen by Cairn when left out.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace(), stringplanmodifier.UseStateForUnknown()}},
			"name":        schema.StringAttribute{Required: true, Description: "The location's name."},
			"description": schema.StringAttribute{Optional: true, Description: "What and where it is."},
			"status":      schema.StringAttribute{Computed: true, Description: "ACTIVE or RETIRED."},
		},
	}
}

func (r *locationResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m locationModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	in := map[string]any{"name": m.Name.ValueString(), "description": m.Description.ValueStringPointer()}
	if v := m.ID.ValueString(); v != "" {
		in["id"] = v
	}
	var out struct {
		CreateLocation struct{ Location locationView }
	}
	if err := r.api.Do(ctx, `mutation($in: CreateLocationInput!) { createLocation(input: $in) { location { `+locationFields+` } cursor } }`, map[string]any{"in": in}, &out); err != nil {
		addAPIError(&resp.Diagnostics, "create the location", err, locationInputFields)
		return
	}
	m.fill(out.CreateLocation.Location)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (a *API) location(ctx context.Context, id string) (*locationView, error) {
	var out struct{ Location *locationView }
	err := a.Do(ctx, `query($id: ID!, $cw: Cursor) { location(id: $id, consistentWith: $cw) { `+locationFields+` } }`, map[string]any{"id": id}, &out)
	return out.Location, err
}

func (r *locationResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m locationModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	l, err := r.api.location(ctx, m.ID.ValueString())
	if err != nil {
		addAPIError(&resp.Diagnostics, "read the location", err, nil)
		return
	}
	if l == nil || l.Status == "RETIRED" {
		resp.State.RemoveResource(ctx)
		return
	}
	m.fill(*l)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *locationResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m locationModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	in := map[string]any{"locationId": m.ID.ValueString(), "name": m.Name.ValueString(), "description": m.Description.ValueStringPointer()}
	var out struct {
		UpdateLocation struct{ Location locationView }
	}
	if err := r.api.Do(ctx, `mutation($in: UpdateLocationInput!) { updateLocation(input: $in) { location { `+locationFields+` } cursor } }`, map[string]any{"in": in}, &out); err != nil {
		addAPIError(&resp.Diagnostics, "update the location", err, locationInputFields)
		return
	}
	m.fill(out.UpdateLocation.Location)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *locationResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var m locationModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	err := r.api.Do(ctx, `mutation($id: ID!) { retireLocation(input: {locationId: $id}) { cursor } }`, map[string]any{"id": m.ID.ValueString()}, nil)
	if err != nil && !isNotFound(err) {
		addAPIError(&resp.Diagnostics, "retire the location", err, nil)
	}
}

func (r *locationResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resource.ImportStatePassthroughID(ctx, path.Root("id"), req, resp)
}
