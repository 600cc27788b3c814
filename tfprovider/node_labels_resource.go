package tfprovider

import (
	"context"
	"maps"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// cairn_node_labels owns the labels of one node: applying sets them all,
// destroying clears them. Nodes themselves enroll through their agents.
type nodeLabelsResource struct{ configured }

func newNodeLabelsResource() resource.Resource { return &nodeLabelsResource{} }

var (
	_ resource.ResourceWithConfigure   = (*nodeLabelsResource)(nil)
	_ resource.ResourceWithImportState = (*nodeLabelsResource)(nil)
)

type nodeLabelsModel struct {
	ID       types.String `tfsdk:"id"`
	NodeID   types.String `tfsdk:"node_id"`
	Labels   types.Map    `tfsdk:"labels"`
	Hostname types.String `tfsdk:"hostname"`
}

type nodeView struct {
	ID, Hostname, Status string
	LocationID           *string
	Labels               []struct{ Key, Value string }
}

const nodeFields = `id hostname status locationId labels { key value }`

func (r *nodeLabelsResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_node_labels"
}

func (r *nodeLabelsResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "The labels of one server node (placement and job targets select on them). The resource owns all of the node's labels: labels set elsewhere show as a change to undo.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, Description: "The node's id.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"node_id": schema.StringAttribute{Required: true, Description: "The node's id.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()}},
			"labels": schema.MapAttribute{Required: true, ElementType: types.StringType, Description: "Every label of the node, key to value."},
			"hostname": schema.StringAttribute{Computed: true, Description: "The node's host name.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
		},
	}
}

func (a *API) node(ctx context.Context, id string) (*nodeView, error) {
	var out struct{ ServerNode *nodeView }
	err := a.Do(ctx, `query($id: ID!, $cw: Cursor) { serverNode(id: $id, consistentWith: $cw) { `+nodeFields+` } }`, map[string]any{"id": id}, &out)
	return out.ServerNode, err
}

func (r *nodeLabelsResource) set(ctx context.Context, m *nodeLabelsModel, labels map[string]string) error {
	in := []map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		in = append(in, map[string]string{"key": k, "value": labels[k]})
	}
	var out struct{ SetNodeLabels struct{ Node nodeView } }
	err := r.api.Do(ctx, `mutation($id: ID!, $l: [LabelInput!]!) { setNodeLabels(input: {nodeId: $id, labels: $l}) { node { `+nodeFields+` } cursor } }`,
		map[string]any{"id": m.NodeID.ValueString(), "l": in}, &out)
	if err == nil {
		m.fill(out.SetNodeLabels.Node)
	}
	return err
}

func (m *nodeLabelsModel) fill(n nodeView) {
	m.ID, m.NodeID, m.Hostname = types.StringValue(n.ID), types.StringValue(n.ID), types.StringValue(n.Hostname)
	vals := map[string]attr.Value{}
	for _, l := range n.Labels {
		vals[l.Key] = types.StringValue(l.Value)
	}
	m.Labels = types.MapValueMust(types.StringType, vals)
}

var nodeLabelFields = fieldPaths{"nodeId": path.Root("node_id"), "labels": path.Root("labels")}

func (r *nodeLabelsResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m nodeLabelsModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	r.apply(ctx, m, &resp.State, &resp.Diagnostics)
}

// apply sets every label the plan gives, and records the node as it is then.
func (r *nodeLabelsResource) apply(ctx context.Context, m nodeLabelsModel, state stateSetter, diags *diag.Diagnostics) {
	var labels map[string]string
	diags.Append(m.Labels.ElementsAs(ctx, &labels, false)...)
	if diags.HasError() {
		return
	}
	if err := r.set(ctx, &m, labels); err != nil {
		addAPIError(diags, "set the node's labels", err, nodeLabelFields)
		return
	}
	diags.Append(state.Set(ctx, &m)...)
}

func (r *nodeLabelsResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m nodeLabelsModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	n, err := r.api.node(ctx, m.NodeID.ValueString())
	if err != nil {
		addAPIError(&resp.Diagnostics, "read the node", err, nil)
		return
	}
	if n == nil || n.Status == "DECOMMISSIONED" {
		resp.State.RemoveResource(ctx)
		return
	}
	m.fill(*n)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *nodeLabelsResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m nodeLabelsModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	r.apply(ctx, m, &resp.State, &resp.Diagnostics)
}

func (r *nodeLabelsResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var m nodeLabelsModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if err := r.set(ctx, &m, map[string]string{}); err != nil && !isNotFound(err) {
		addAPIError(&resp.Diagnostics, "clear the node's labels", err, nil)
	}
}

func (r *nodeLabelsResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resource.ImportStatePassthroughID(ctx, path.Root("node_id"), req, resp)
}
