package tfprovider

import (
	"context"
	"encoding/json"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// A schedule's job and timing are fixed at creation (a change replaces it);
// paused toggles in place, and destroying it deletes it.
type scheduleResource struct{ configured }

func newScheduleResource() resource.Resource { return &scheduleResource{} }

var (
	_ resource.ResourceWithConfigure   = (*scheduleResource)(nil)
	_ resource.ResourceWithImportState = (*scheduleResource)(nil)
)

type scheduleModel struct {
	ID           types.String `tfsdk:"id"`
	Job          types.String `tfsdk:"job"`
	EverySeconds types.Int64  `tfsdk:"every_seconds"`
	Cron         types.String `tfsdk:"cron"`
	Paused       types.Bool   `tfsdk:"paused"`
	NextRunAt    types.String `tfsdk:"next_run_at"`
}

type scheduleView struct {
	ID, Status   string
	EverySeconds *int64
	Cron         *string
	NextRunAt    *string
}

const scheduleFields = `id status everySeconds cron nextRunAt`

var scheduleInputFields = fieldPaths{"scheduleId": path.Root("id"), "job": path.Root("job"), "everySeconds": path.Root("every_seconds"), "cron": path.Root("cron")}

func (r *scheduleResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_schedule"
}

func (r *scheduleResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "A schedule that submits a job at an interval or at cron instants.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Required: true, Description: "The schedule's id (up to 111 characters).",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()}},
			"job": schema.StringAttribute{Required: true,
				Description:   "The job each firing submits, as the API's ScheduleJobInput in JSON: jsonencode({spec = {kind = \"SCRIPT\", script = {...}}, target = {every = true}}).",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()}},
			"every_seconds": schema.Int64Attribute{Optional: true, Description: "Fire every so many seconds (or give cron).",
				PlanModifiers: []planmodifier.Int64{int64planmodifier.RequiresReplace()}},
			"cron": schema.StringAttribute{Optional: true, Description: "Fire at the instants of a five-field cron expression, in UTC.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()}},
			"paused": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				Description: "A paused schedule fires no more until resumed."},
			"next_run_at": schema.StringAttribute{Computed: true, Description: "When it fires next (RFC 3339); null while paused."},
		},
	}
}

func (m *scheduleModel) fill(s scheduleView) {
	m.ID, m.Paused = types.StringValue(s.ID), types.BoolValue(s.Status == "PAUSED")
	m.EverySeconds, m.Cron, m.NextRunAt = types.Int64PointerValue(s.EverySeconds), types.StringPointerValue(s.Cron), types.StringPointerValue(s.NextRunAt)
}

func (r *scheduleResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m scheduleModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var job map[string]any
	if err := json.Unmarshal([]byte(m.Job.ValueString()), &job); err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("job"), "Invalid job", "job must be a JSON object (use jsonencode): "+err.Error())
		return
	}
	in := map[string]any{"scheduleId": m.ID.ValueString(), "job": job, "everySeconds": m.EverySeconds.ValueInt64Pointer(), "cron": m.Cron.ValueStringPointer()}
	var out struct {
		CreateSchedule struct{ Schedule scheduleView }
	}
	if err := r.api.Do(ctx, `mutation($in: CreateScheduleInput!) { createSchedule(input: $in) { schedule { `+scheduleFields+` } cursor } }`, map[string]any{"in": in}, &out); err != nil {
		addAPIError(&resp.Diagnostics, "create the schedule", err, scheduleInputFields)
		return
	}
	paused := m.Paused.ValueBool()
	m.fill(out.CreateSchedule.Schedule)
	if paused {
		r.pause(ctx, &m, true, &resp.Diagnostics)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *scheduleResource) pause(ctx context.Context, m *scheduleModel, paused bool, diags interface{ AddError(string, string) }) {
	mutation := "resumeSchedule"
	if paused {
		mutation = "pauseSchedule"
	}
	var out map[string]struct{ Schedule scheduleView }
	err := r.api.Do(ctx, `mutation($id: ID!) { `+mutation+`(input: {scheduleId: $id, reason: "set by Terraform"}) { schedule { `+scheduleFields+` } cursor } }`,
		map[string]any{"id": m.ID.ValueString()}, &out)
	if err != nil {
		diags.AddError("Cannot "+mutation, err.Error())
		return
	}
	for _, v := range out {
		m.fill(v.Schedule)
	}
}

func (r *scheduleResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m scheduleModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	var out struct {
		Schedule *struct {
			scheduleView
			Job json.RawMessage
		}
	}
	if err := r.api.Do(ctx, `query($id: ID!) { schedule(id: $id) { `+scheduleFields+` } }`, map[string]any{"id": m.ID.ValueString()}, &out); err != nil {
		addAPIError(&resp.Diagnostics, "read the schedule", err, nil)
		return
	}
	if out.Schedule == nil || out.Schedule.Status == "DELETED" {
		resp.State.RemoveResource(ctx)
		return
	}
	m.fill(out.Schedule.scheduleView)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *scheduleResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m scheduleModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	r.pause(ctx, &m, m.Paused.ValueBool(), &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *scheduleResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var m scheduleModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	err := r.api.Do(ctx, `mutation($id: ID!) { deleteSchedule(input: {scheduleId: $id, reason: "destroyed by Terraform"}) { cursor } }`,
		map[string]any{"id": m.ID.ValueString()}, nil)
	if err != nil && !isNotFound(err) {
		addAPIError(&resp.Diagnostics, "delete the schedule", err, nil)
	}
}

func (r *scheduleResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resource.ImportStatePassthroughID(ctx, path.Root("id"), req, resp)
}
