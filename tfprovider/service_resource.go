package tfprovider

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"cairn/graph/client"
)

// DefaultWait bounds how long create, update and delete wait for a service
// to settle, unless its timeouts say otherwise.
const DefaultWait = 20 * time.Minute

type serviceResource struct{ configured }

func newServiceResource() resource.Resource { return &serviceResource{} }

var (
	_ resource.ResourceWithConfigure   = (*serviceResource)(nil)
	_ resource.ResourceWithImportState = (*serviceResource)(nil)
)

type serviceModel struct {
	ID                 types.String   `tfsdk:"id"`
	Name               types.String   `tfsdk:"name"`
	TenantID           types.String   `tfsdk:"tenant_id"`
	Template           types.String   `tfsdk:"template"`
	Version            types.String   `tfsdk:"version"`
	Flavor             types.String   `tfsdk:"flavor"`
	Variables          types.Map      `tfsdk:"variables"`
	SensitiveVariables types.Map      `tfsdk:"sensitive_variables"`
	Running            types.Bool     `tfsdk:"running"`
	Status             types.String   `tfsdk:"status"`
	Revision           types.Int64    `tfsdk:"revision"`
	Outputs            types.Map      `tfsdk:"outputs"`
	Timeouts           *timeoutsModel `tfsdk:"timeouts"`
}

type timeoutsModel struct {
	Create types.String `tfsdk:"create"`
	Update types.String `tfsdk:"update"`
	Delete types.String `tfsdk:"delete"`
}

// wait is the timeout of one operation, DefaultWait when not set.
func (t *timeoutsModel) wait(op string) (time.Duration, error) {
	var v types.String
	if t != nil {
		v = map[string]types.String{"create": t.Create, "update": t.Update, "delete": t.Delete}[op]
	}
	if v.ValueString() == "" {
		return DefaultWait, nil
	}
	d, err := time.ParseDuration(v.ValueString())
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("timeouts.%s: %q is not a positive duration such as \"10m\"", op, v.ValueString())
	}
	return d, nil
}

// serviceFields are the API's input fields and the attributes they set.
var serviceFields = fieldPaths{
	"name": path.Root("name"), "tenantId": path.Root("tenant_id"), "templateName": path.Root("template"),
	"templateVersion": path.Root("version"), "flavor": path.Root("flavor"), "variables": path.Root("variables"),
}

func (r *serviceResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_service"
}

func (r *serviceResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	resp.Schema = schema.Schema{
		Description: "A service: a published template version deployed for a tenant. A change of version or variables is an update in place (Cairn's updateService); Terraform waits until the service settles.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, Description: "The service's id.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"name": schema.StringAttribute{Required: true, PlanModifiers: replace,
				Description: "The service's name within its tenant."},
			"tenant_id": schema.StringAttribute{Optional: true, Computed: true,
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace(), stringplanmodifier.UseStateForUnknown()},
				Description:   "The tenant to deploy for; tenant users may leave it out (their own)."},
			"template": schema.StringAttribute{Required: true, PlanModifiers: replace,
				Description: "The catalog template to deploy."},
			"version": schema.StringAttribute{Required: true,
				Description: "The published template version; changing it updates the service in place."},
			"flavor": schema.StringAttribute{Optional: true, PlanModifiers: replace,
				Description: "A flavor of the template whose values fill in the variables not given, at creation."},
			"variables": schema.MapAttribute{Optional: true, ElementType: types.StringType,
				Description: "Values of the template's variables, as text: numbers, booleans and JSON for objects and arrays are converted to each variable's type. Changing them updates the service in place."},
			"sensitive_variables": schema.MapAttribute{Optional: true, Sensitive: true, ElementType: types.StringType,
				Description: "Values of sensitive variables (passwords, tokens): kept out of plans and logs; Cairn seals them before recording."},
			"running": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(true),
				Description: "Whether the service runs (started after its resources are made); false leaves it registered or stops it."},
			"status":   schema.StringAttribute{Computed: true, Description: "Where the service is in its life, e.g. RUNNING."},
			"revision": schema.Int64Attribute{Computed: true, Description: "The revision of its version and variables: 1 at creation, one more for each update."},
			"outputs": schema.MapAttribute{Computed: true, ElementType: types.StringType,
				Description: "The service's outputs, as text (JSON for values that are not strings)."},
			"timeouts": schema.SingleNestedAttribute{Optional: true,
				Description: "How long to wait for the service to settle, as Go durations; each defaults to 20m.",
				Attributes: map[string]schema.Attribute{
					"create": schema.StringAttribute{Optional: true, Description: "Creation (and first start)."},
					"update": schema.StringAttribute{Optional: true, Description: "An update, a start or a stop."},
					"delete": schema.StringAttribute{Optional: true, Description: "Stopping and removal."},
				}},
		},
	}
}

// serviceView is what the provider reads of a service.
type serviceView struct {
	ID              string          `json:"id"`
	Name            string          `json:"name"`
	TenantID        string          `json:"tenantId"`
	TemplateName    string          `json:"templateName"`
	TemplateVersion string          `json:"templateVersion"`
	Variables       json.RawMessage `json:"variables"`
	Status          string          `json:"status"`
	FailedIn        *string         `json:"failedIn"`
	Cause           *string         `json:"cause"`
	Revision        int64           `json:"revision"`
	Outputs         json.RawMessage `json:"outputs"`
}

const serviceViewFields = `id name tenantId templateName templateVersion variables status failedIn cause revision outputs`

// sealedValue is how the API shows a sensitive variable's value.
const sealedValue = `"(sealed)"`

// busyStatuses are those the orchestrator is still working in.
var busyStatuses = []string{"REGISTERING", "ROLLING_BACK", "STARTING", "STOPPING", "REMOVING", "REPAIRING", "UPDATING", "REVERTING"}

func (a *API) service(ctx context.Context, id string) (*serviceView, error) {
	return a.serviceAfter(ctx, id, "")
}

// serviceAfter reads a service as the read models show it once they have
// applied the event at cursor (a mutation's): a read that sees its own
// write.
func (a *API) serviceAfter(ctx context.Context, id, cursor string) (*serviceView, error) {
	var out struct{ Service *serviceView }
	vars := map[string]any{"id": id}
	if cursor != "" {
		vars["cw"] = cursor
	}
	err := a.Do(ctx, `query($id: ID!, $cw: Cursor) { service(id: $id, consistentWith: $cw) { `+serviceViewFields+` } }`, vars, &out)
	return out.Service, err
}

// settle polls the service, from the write at cursor on, until the
// orchestrator is done with it.
func (a *API) settle(ctx context.Context, id, cursor string, wait time.Duration) (*serviceView, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		s, err := a.serviceAfter(ctx, id, cursor)
		if err != nil {
			return nil, err
		}
		if s == nil {
			return nil, fmt.Errorf("service %s does not exist", id)
		}
		if !slices.Contains(busyStatuses, s.Status) {
			return s, nil
		}
		select {
		case <-ctx.Done():
			return s, fmt.Errorf("service %s is still %s after %s: raise the timeout, or look at it in the portal", s.Name, strings.ToLower(s.Status), wait)
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// command runs startService, stopService or removeService, and returns
// the cursor of its write.
func (a *API) command(ctx context.Context, mutation, id string) (string, error) {
	var out map[string]struct{ Cursor string }
	err := a.Do(ctx, fmt.Sprintf(`mutation($id: ID!) { %s(input: {serviceId: $id}) { cursor } }`, mutation), map[string]any{"id": id}, &out)
	return out[mutation].Cursor, err
}

// run runs a command and waits for the service to settle after it.
func (a *API) run(ctx context.Context, mutation, id string, wait time.Duration) (*serviceView, error) {
	cursor, err := a.command(ctx, mutation, id)
	if err != nil {
		return nil, err
	}
	return a.settle(ctx, id, cursor, wait)
}

// failure describes a service a step left failed.
func failure(s *serviceView) string {
	msg := fmt.Sprintf("service %s is %s", s.Name, strings.ToLower(s.Status))
	if s.FailedIn != nil {
		msg += " (in " + strings.ToLower(*s.FailedIn) + ")"
	}
	if s.Cause != nil && *s.Cause != "" {
		msg += ": " + *s.Cause
	}
	return msg
}

// variableInput types the configured variables by the template version's
// declared types; removed lists variables to put back to their default.
func (a *API) variableInput(ctx context.Context, m serviceModel, removed []string, diags *diag.Diagnostics) map[string]json.RawMessage {
	var tpl struct {
		Template *struct {
			Variables []struct{ Name, Type string }
		}
	}
	err := a.Do(ctx, `query($n: String!, $v: String!, $cw: Cursor) { template(name: $n, version: $v, consistentWith: $cw) { variables { name type } } }`,
		map[string]any{"n": m.Template.ValueString(), "v": m.Version.ValueString()}, &tpl)
	if err != nil {
		addAPIError(diags, "read the template's variables", err, nil)
		return nil
	}
	if tpl.Template == nil {
		diags.AddAttributeError(path.Root("version"), "No such template version",
			fmt.Sprintf("%s@%s is not in the catalog (or not yours to see).", m.Template.ValueString(), m.Version.ValueString()))
		return nil
	}
	declared := map[string]string{}
	for _, v := range tpl.Template.Variables {
		declared[v.Name] = v.Type
	}
	out := map[string]json.RawMessage{}
	for _, name := range removed {
		out[name] = json.RawMessage("null")
	}
	for attrName, mp := range map[string]types.Map{"variables": m.Variables, "sensitive_variables": m.SensitiveVariables} {
		var values map[string]string
		diags.Append(mp.ElementsAs(ctx, &values, false)...)
		for k, text := range values {
			v, err := client.VariableValue(declared[k], text)
			if err != nil {
				diags.AddAttributeError(path.Root(attrName).AtMapKey(k), "Invalid variable value", err.Error())
				continue
			}
			out[k] = v
		}
	}
	return out
}

func (r *serviceResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan serviceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	wait, err := plan.Timeouts.wait("create")
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("timeouts"), "Invalid timeout", err.Error())
	}
	vars := r.api.variableInput(ctx, plan, nil, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	in := map[string]any{"name": plan.Name.ValueString(), "templateName": plan.Template.ValueString(),
		"templateVersion": plan.Version.ValueString(), "variables": vars}
	if v := plan.TenantID.ValueString(); v != "" {
		in["tenantId"] = v
	}
	if v := plan.Flavor.ValueString(); v != "" {
		in["flavor"] = v
	}
	var out struct {
		CreateService struct {
			Service struct{ ID string }
			Cursor  string
		}
	}
	if err := r.api.Do(ctx, `mutation($in: CreateServiceInput!) { createService(input: $in) { service { id } cursor } }`, map[string]any{"in": in}, &out); err != nil {
		addAPIError(&resp.Diagnostics, "create the service", err, serviceFields)
		return
	}
	id := out.CreateService.Service.ID
	// From here on the service exists: it is in the state even when a later
	// step fails, so Terraform taints it rather than losing it.
	plan.ID = types.StringValue(id)
	s, err := r.api.settle(ctx, id, out.CreateService.Cursor, wait)
	if err == nil && s.Status == "REGISTERED" && plan.Running.ValueBool() {
		s, err = r.api.run(ctx, "startService", id, wait)
	}
	r.finish(ctx, s, err, &plan, &resp.State, &resp.Diagnostics, "create the service")
}

// finish records the service as it is after a step, and the step's error.
func (r *serviceResource) finish(ctx context.Context, s *serviceView, err error, m *serviceModel, state stateSetter, diags *diag.Diagnostics, what string) {
	if s != nil {
		m.fill(ctx, s, diags)
	}
	// Every computed value must be known once an apply ends, failed or not.
	if m.Status.IsUnknown() {
		m.Status = types.StringNull()
	}
	if m.Revision.IsUnknown() {
		m.Revision = types.Int64Null()
	}
	if m.Outputs.IsUnknown() {
		m.Outputs = types.MapNull(types.StringType)
	}
	if m.TenantID.IsUnknown() {
		m.TenantID = types.StringNull()
	}
	diags.Append(state.Set(ctx, m)...)
	switch {
	case err != nil:
		addAPIError(diags, what, err, serviceFields)
	case s != nil && (s.Status == "FAILED" || s.Status == "ROLLBACK_FAILED" || s.Status == "MANUAL_CLEANUP_REQUIRED" || s.Status == "DEGRADED"):
		diags.AddError("Cannot "+what, failure(s))
	case s != nil && m.Running.ValueBool() && s.Status != "RUNNING":
		diags.AddError("Cannot "+what, fmt.Sprintf("service %s is %s, not running", s.Name, strings.ToLower(s.Status)))
	}
}

type stateSetter interface {
	Set(ctx context.Context, val any) diag.Diagnostics
}

// fill sets the computed attributes, and the configured variables as the
// service has them now (so a change made elsewhere shows in the plan).
// Sensitive values are never read back: the API does not return them.
func (m *serviceModel) fill(ctx context.Context, s *serviceView, diags *diag.Diagnostics) {
	imported := m.Template.IsNull() // an import knows nothing but the id
	m.ID, m.Name, m.TenantID = types.StringValue(s.ID), types.StringValue(s.Name), types.StringValue(s.TenantID)
	m.Template, m.Version = types.StringValue(s.TemplateName), types.StringValue(s.TemplateVersion)
	m.Status, m.Revision = types.StringValue(s.Status), types.Int64Value(s.Revision)
	if s.Status != "REGISTERING" && s.Status != "UPDATING" {
		m.Running = types.BoolValue(s.Status == "RUNNING" || s.Status == "STARTING" || s.Status == "REPAIRING" && m.Running.ValueBool())
	}
	var outputs map[string]json.RawMessage
	_ = json.Unmarshal(s.Outputs, &outputs)
	outs := map[string]attr.Value{}
	for k, v := range outputs {
		outs[k] = types.StringValue(client.VariableText(v))
	}
	m.Outputs = types.MapValueMust(types.StringType, outs)
	var server map[string]json.RawMessage
	_ = json.Unmarshal(s.Variables, &server)
	var mine map[string]string
	if !m.Variables.IsNull() && !m.Variables.IsUnknown() {
		diags.Append(m.Variables.ElementsAs(ctx, &mine, false)...)
	}
	if imported && len(server) > 0 {
		// Imported: take what the service has, but the values that are null
		// (sensitive, or unset).
		mine = map[string]string{}
		for k, v := range server {
			if string(v) != "null" && string(v) != sealedValue {
				mine[k] = ""
			}
		}
	}
	if mine == nil {
		return
	}
	vals := map[string]attr.Value{}
	for k := range mine {
		if v, ok := server[k]; ok && string(v) != "null" && string(v) != sealedValue {
			vals[k] = types.StringValue(client.VariableText(v))
		}
	}
	m.Variables = types.MapValueMust(types.StringType, vals)
}

func (r *serviceResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state serviceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	s, err := r.api.service(ctx, state.ID.ValueString())
	if err != nil && !isNotFound(err) {
		addAPIError(&resp.Diagnostics, "read the service", err, nil)
		return
	}
	if s == nil || s.Status == "REMOVED" {
		// Removed outside Terraform: planned for creation again.
		resp.State.RemoveResource(ctx)
		return
	}
	state.fill(ctx, s, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *serviceResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, prior serviceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	wait, err := plan.Timeouts.wait("update")
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("timeouts"), "Invalid timeout", err.Error())
	}
	if resp.Diagnostics.HasError() {
		return
	}
	plan.ID = prior.ID
	id := prior.ID.ValueString()
	var s *serviceView
	if !plan.Version.Equal(prior.Version) || !plan.Variables.Equal(prior.Variables) || !plan.SensitiveVariables.Equal(prior.SensitiveVariables) {
		var removed []string
		for _, mp := range []struct{ before, after types.Map }{{prior.Variables, plan.Variables}, {prior.SensitiveVariables, plan.SensitiveVariables}} {
			var before, after map[string]string
			resp.Diagnostics.Append(mp.before.ElementsAs(ctx, &before, true)...)
			resp.Diagnostics.Append(mp.after.ElementsAs(ctx, &after, true)...)
			for k := range before {
				if _, kept := after[k]; !kept {
					removed = append(removed, k)
				}
			}
		}
		vars := r.api.variableInput(ctx, plan, removed, &resp.Diagnostics)
		if resp.Diagnostics.HasError() {
			return
		}
		var out struct {
			UpdateService struct {
				Service struct{ Revision int64 }
				Plan    struct{ NoChange bool }
				Cursor  string
			}
		}
		in := map[string]any{"serviceId": id, "templateVersion": plan.Version.ValueString(), "variables": vars}
		if err := r.api.Do(ctx, `mutation($in: UpdateServiceInput!) { updateService(input: $in) { service { revision } plan { noChange } cursor } }`,
			map[string]any{"in": in}, &out); err != nil {
			addAPIError(&resp.Diagnostics, "update the service", err, fieldPaths{"templateVersion": path.Root("version"), "variables": path.Root("variables")})
			return
		}
		if s, err = r.api.settle(ctx, id, out.UpdateService.Cursor, wait); err != nil {
			r.finish(ctx, s, err, &plan, &resp.State, &resp.Diagnostics, "update the service")
			return
		}
		if want := out.UpdateService.Service.Revision; !out.UpdateService.Plan.NoChange && s.Revision != want {
			// Reverted: the service is as it was; keep the prior state so the
			// next plan shows the update again.
			resp.Diagnostics.Append(resp.State.Set(ctx, &prior)...)
			resp.Diagnostics.AddError("Cannot update the service",
				fmt.Sprintf("the update to revision %d failed and the service went back to revision %d: %s", want, s.Revision, ptrText(s.Cause)))
			return
		}
	}
	if s == nil {
		if s, err = r.api.service(ctx, id); err != nil || s == nil {
			addAPIError(&resp.Diagnostics, "read the service", fmt.Errorf("%v", orMissing(err)), nil)
			return
		}
	}
	switch want := plan.Running.ValueBool(); {
	case want && s.Status != "RUNNING":
		s, err = r.api.run(ctx, "startService", id, wait)
	case !want && s.Status == "RUNNING":
		s, err = r.api.run(ctx, "stopService", id, wait)
	}
	r.finish(ctx, s, err, &plan, &resp.State, &resp.Diagnostics, "update the service")
}

func orMissing(err error) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("the service no longer exists")
}

func ptrText(s *string) string {
	if s == nil || *s == "" {
		return "no cause recorded"
	}
	return *s
}

func (r *serviceResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state serviceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	wait, err := state.Timeouts.wait("delete")
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("timeouts"), "Invalid timeout", err.Error())
	}
	if resp.Diagnostics.HasError() {
		return
	}
	id := state.ID.ValueString()
	s, err := r.api.settle(ctx, id, "", wait)
	if err != nil || s.Status == "REMOVED" {
		if err != nil && !isNotFound(err) && !strings.Contains(err.Error(), "does not exist") {
			addAPIError(&resp.Diagnostics, "remove the service", err, nil)
		}
		return
	}
	// A service that may run is stopped first: Cairn removes only what
	// runs nothing.
	if s.Status == "RUNNING" || s.Status == "DEGRADED" || s.Status == "FAILED" && s.FailedIn != nil && *s.FailedIn != "REGISTER" {
		if _, err := r.api.run(ctx, "stopService", id, wait); err != nil {
			addAPIError(&resp.Diagnostics, "stop the service", err, nil)
			return
		}
	}
	s, err = r.api.run(ctx, "removeService", id, wait)
	switch {
	case err != nil:
		addAPIError(&resp.Diagnostics, "remove the service", err, nil)
	case s.Status != "REMOVED":
		resp.Diagnostics.AddError("Cannot remove the service", failure(s))
	}
}

// ImportState takes a service id, or a name ("NAME" or "TENANT/NAME").
func (r *serviceResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	id, err := r.api.serviceByIDOrName(ctx, req.ID)
	if err != nil {
		resp.Diagnostics.AddError("Cannot import the service", err.Error())
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), id)...)
}

func (a *API) serviceByIDOrName(ctx context.Context, ref string) (string, error) {
	if s, err := a.service(ctx, ref); err == nil && s != nil {
		return s.ID, nil
	}
	tenant, name, scoped := strings.Cut(ref, "/")
	if !scoped {
		tenant, name = "", ref
	}
	var out struct {
		Services struct {
			Edges []struct{ Node serviceView }
		}
	}
	filter := map[string]any{"name": name}
	if tenant != "" {
		filter["tenantId"] = tenant
	}
	if err := a.Do(ctx, `query($f: ServiceFilter, $cw: Cursor) { services(first: 500, filter: $f, consistentWith: $cw) { edges { node { id name tenantId status } } } }`,
		map[string]any{"f": filter}, &out); err != nil {
		return "", err
	}
	var found []serviceView
	for _, e := range out.Services.Edges {
		if e.Node.Name == name && e.Node.Status != "REMOVED" {
			found = append(found, e.Node)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("no service has the id or name %q (or it is not yours to see)", ref)
	case 1:
		return found[0].ID, nil
	}
	var ids []string
	for _, s := range found {
		ids = append(ids, s.TenantID+"/"+s.Name+" ("+s.ID+")")
	}
	return "", fmt.Errorf("%d services are named %q: import by id, one of %s", len(found), name, strings.Join(ids, ", "))
}
