package tfprovider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// The data sources, one type each: cairn_template, cairn_nodes,
// cairn_service, cairn_location.

// cairn_template: a template version, the latest published when version is
// left out.
type templateDataSource struct{ configuredSource }

func newTemplateDataSource() datasource.DataSource { return &templateDataSource{} }

type templateDataModel struct {
	Name        types.String `tfsdk:"name"`
	Version     types.String `tfsdk:"version"`
	ID          types.String `tfsdk:"id"`
	Status      types.String `tfsdk:"status"`
	Vendor      types.String `tfsdk:"vendor"`
	Description types.String `tfsdk:"description"`
	Variables   types.Map    `tfsdk:"variables"`
}

func (d *templateDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_template"
}

func (d *templateDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "A template version of the catalog: the one named, or the newest published.",
		Attributes: map[string]schema.Attribute{
			"name":        schema.StringAttribute{Required: true, Description: "The template's name."},
			"version":     schema.StringAttribute{Optional: true, Computed: true, Description: "A version; the newest published when left out."},
			"id":          schema.StringAttribute{Computed: true, Description: "NAME@VERSION."},
			"status":      schema.StringAttribute{Computed: true, Description: "VALIDATED, PUBLISHED or DEPRECATED."},
			"vendor":      schema.StringAttribute{Computed: true, Description: "Who publishes it."},
			"description": schema.StringAttribute{Computed: true, Description: "What it deploys."},
			"variables": schema.MapAttribute{Computed: true, ElementType: types.StringType,
				Description: "Its variables, name to type (STRING, INTEGER, ...)."},
		},
	}
}

func (d *templateDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m templateDataModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	version := m.Version.ValueString()
	if version == "" {
		var out struct {
			Templates struct {
				Edges []struct{ Node struct{ Version string } }
			}
		}
		if err := d.api.Do(ctx, `query($n: String!, $cw: Cursor) { templates(first: 1, filter: {name: $n, status: [PUBLISHED], latestOnly: true}, consistentWith: $cw) { edges { node { version } } } }`,
			map[string]any{"n": m.Name.ValueString()}, &out); err != nil {
			addAPIError(&resp.Diagnostics, "list the template's versions", err, nil)
			return
		}
		if len(out.Templates.Edges) == 0 {
			resp.Diagnostics.AddAttributeError(path.Root("name"), "No published version", fmt.Sprintf("template %q has no published version.", m.Name.ValueString()))
			return
		}
		version = out.Templates.Edges[0].Node.Version
	}
	t, err := d.api.template(ctx, m.Name.ValueString(), version)
	if err != nil {
		addAPIError(&resp.Diagnostics, "read the template", err, nil)
		return
	}
	if t == nil {
		resp.Diagnostics.AddAttributeError(path.Root("version"), "No such template version", fmt.Sprintf("%s@%s is not in the catalog.", m.Name.ValueString(), version))
		return
	}
	m.ID, m.Version, m.Status, m.Vendor = types.StringValue(t.ID), types.StringValue(t.Version), types.StringValue(t.Status), types.StringValue(t.Vendor)
	m.Description = types.StringPointerValue(t.Description)
	vars := map[string]attr.Value{}
	for _, v := range t.Variables {
		vars[v.Name] = types.StringValue(v.Type)
	}
	m.Variables = types.MapValueMust(types.StringType, vars)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// cairn_nodes: the nodes with some labels, in a location, in some states.
type nodesDataSource struct{ configuredSource }

func newNodesDataSource() datasource.DataSource { return &nodesDataSource{} }

type nodesDataModel struct {
	Labels     types.Map       `tfsdk:"labels"`
	LocationID types.String    `tfsdk:"location_id"`
	Status     types.List      `tfsdk:"status"`
	Nodes      []nodeDataModel `tfsdk:"nodes"`
}

type nodeDataModel struct {
	ID         types.String `tfsdk:"id"`
	Hostname   types.String `tfsdk:"hostname"`
	Status     types.String `tfsdk:"status"`
	LocationID types.String `tfsdk:"location_id"`
	Labels     types.Map    `tfsdk:"labels"`
}

// maxNodes bounds what cairn_nodes reads: pages of the API's largest size.
const maxNodes = 10000

func (d *nodesDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_nodes"
}

func (d *nodesDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "The server nodes that have every label given, in a location, in some states (all of them when nothing is given), at most 10,000.",
		Attributes: map[string]schema.Attribute{
			"labels":      schema.MapAttribute{Optional: true, ElementType: types.StringType, Description: "Labels a node must have, key to value."},
			"location_id": schema.StringAttribute{Optional: true, Description: "Only the nodes of this location."},
			"status": schema.ListAttribute{Optional: true, ElementType: types.StringType,
				Description: "Only nodes in these states (ONLINE, DISCONNECTED, DOWN, ...)."},
			"nodes": schema.ListNestedAttribute{Computed: true, Description: "The nodes, by host name.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"id":          schema.StringAttribute{Computed: true, Description: "The node's id."},
					"hostname":    schema.StringAttribute{Computed: true, Description: "Its host name."},
					"status":      schema.StringAttribute{Computed: true, Description: "Its state."},
					"location_id": schema.StringAttribute{Computed: true, Description: "Its location."},
					"labels":      schema.MapAttribute{Computed: true, ElementType: types.StringType, Description: "Its labels."},
				}}},
		},
	}
}

func (d *nodesDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m nodesDataModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	var labels map[string]string
	var statuses []string
	resp.Diagnostics.Append(m.Labels.ElementsAs(ctx, &labels, true)...)
	resp.Diagnostics.Append(m.Status.ElementsAs(ctx, &statuses, true)...)
	if resp.Diagnostics.HasError() {
		return
	}
	filter := map[string]any{}
	for k, v := range labels {
		filter["labels"] = append(asList(filter["labels"]), map[string]string{"key": k, "value": v})
	}
	if v := m.LocationID.ValueString(); v != "" {
		filter["locationId"] = v
	}
	if len(statuses) > 0 {
		filter["status"] = statuses
	}
	m.Nodes = []nodeDataModel{}
	var after *string
	for len(m.Nodes) < maxNodes {
		var out struct {
			Nodes struct {
				Edges    []struct{ Node nodeView }
				PageInfo struct {
					HasNextPage bool
					EndCursor   *string
				}
			}
		}
		if err := d.api.Do(ctx, `query($f: NodeFilter, $a: String, $cw: Cursor) { nodes(first: 500, after: $a, filter: $f, consistentWith: $cw) { edges { node { `+nodeFields+` } } pageInfo { hasNextPage endCursor } } }`,
			map[string]any{"f": filter, "a": after}, &out); err != nil {
			addAPIError(&resp.Diagnostics, "list the nodes", err, fieldPaths{"labels": path.Root("labels"), "locationId": path.Root("location_id"), "status": path.Root("status")})
			return
		}
		for _, e := range out.Nodes.Edges {
			var n nodeLabelsModel
			n.fill(e.Node)
			m.Nodes = append(m.Nodes, nodeDataModel{ID: n.ID, Hostname: n.Hostname, Status: types.StringValue(e.Node.Status),
				LocationID: types.StringPointerValue(e.Node.LocationID), Labels: n.Labels})
		}
		if !out.Nodes.PageInfo.HasNextPage || out.Nodes.PageInfo.EndCursor == nil {
			break
		}
		after = out.Nodes.PageInfo.EndCursor
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func asList(v any) []map[string]string {
	l, _ := v.([]map[string]string)
	return l
}

// cairn_service: a service by id or name.
type serviceDataSource struct{ configuredSource }

func newServiceDataSource() datasource.DataSource { return &serviceDataSource{} }

type serviceDataModel struct {
	ID       types.String `tfsdk:"id"`
	Name     types.String `tfsdk:"name"`
	TenantID types.String `tfsdk:"tenant_id"`
	Template types.String `tfsdk:"template"`
	Version  types.String `tfsdk:"version"`
	Status   types.String `tfsdk:"status"`
	Revision types.Int64  `tfsdk:"revision"`
	Outputs  types.Map    `tfsdk:"outputs"`
}

func (d *serviceDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_service"
}

func (d *serviceDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "A service, by id or by name (within tenant_id when several tenants have one of that name).",
		Attributes: map[string]schema.Attribute{
			"id":        schema.StringAttribute{Optional: true, Computed: true, Description: "The service's id."},
			"name":      schema.StringAttribute{Optional: true, Computed: true, Description: "The service's name."},
			"tenant_id": schema.StringAttribute{Optional: true, Computed: true, Description: "Its tenant."},
			"template":  schema.StringAttribute{Computed: true, Description: "The template it deploys."},
			"version":   schema.StringAttribute{Computed: true, Description: "The template version."},
			"status":    schema.StringAttribute{Computed: true, Description: "Where it is in its life."},
			"revision":  schema.Int64Attribute{Computed: true, Description: "Its revision."},
			"outputs":   schema.MapAttribute{Computed: true, ElementType: types.StringType, Description: "Its outputs, as text."},
		},
	}
}

func (d *serviceDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m serviceDataModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	ref := m.ID.ValueString()
	if ref == "" {
		ref = m.Name.ValueString()
		if t := m.TenantID.ValueString(); t != "" {
			ref = t + "/" + ref
		}
	}
	if ref == "" {
		resp.Diagnostics.AddError("Which service?", "Give id or name.")
		return
	}
	id, err := d.api.serviceByIDOrName(ctx, ref)
	if err != nil {
		resp.Diagnostics.AddError("Cannot find the service", err.Error())
		return
	}
	s, err := d.api.service(ctx, id)
	if err != nil || s == nil {
		addAPIError(&resp.Diagnostics, "read the service", orMissing(err), nil)
		return
	}
	var full serviceModel
	full.fill(ctx, s, &resp.Diagnostics)
	m = serviceDataModel{ID: full.ID, Name: full.Name, TenantID: full.TenantID, Template: full.Template, Version: full.Version,
		Status: full.Status, Revision: full.Revision, Outputs: full.Outputs}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// cairn_location: a location by id or name.
type locationDataSource struct{ configuredSource }

func newLocationDataSource() datasource.DataSource { return &locationDataSource{} }

func (d *locationDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_location"
}

func (d *locationDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "A location, by id or by name.",
		Attributes: map[string]schema.Attribute{
			"id":          schema.StringAttribute{Optional: true, Computed: true, Description: "The location's id."},
			"name":        schema.StringAttribute{Optional: true, Computed: true, Description: "Its name."},
			"description": schema.StringAttribute{Computed: true, Description: "What and where it is."},
			"status":      schema.StringAttribute{Computed: true, Description: "ACTIVE or RETIRED."},
		},
	}
}

func (d *locationDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m locationModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if id := m.ID.ValueString(); id != "" {
		l, err := d.api.location(ctx, id)
		if err != nil || l == nil {
			addAPIError(&resp.Diagnostics, "read the location", orMissingLocation(err, id), nil)
			return
		}
		m.fill(*l)
		resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
		return
	}
	var out struct {
		Locations struct {
			Edges []struct{ Node locationView }
		}
	}
	if err := d.api.Do(ctx, `query($cw: Cursor) { locations(first: 500, consistentWith: $cw) { edges { node { `+locationFields+` } } } }`, nil, &out); err != nil {
		addAPIError(&resp.Diagnostics, "list the locations", err, nil)
		return
	}
	for _, e := range out.Locations.Edges {
		if e.Node.Name == m.Name.ValueString() {
			m.fill(e.Node)
			resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
			return
		}
	}
	resp.Diagnostics.AddAttributeError(path.Root("name"), "No such location", fmt.Sprintf("no location is named %q.", m.Name.ValueString()))
}

func orMissingLocation(err error, id string) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("location %q does not exist", id)
}
