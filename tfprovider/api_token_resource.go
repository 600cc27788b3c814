package tfprovider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// An API token's secret is shown once, at creation: it lives only in the
// state (marked sensitive). Destroying the token revokes it.
type apiTokenResource struct{ configured }

func newAPITokenResource() resource.Resource { return &apiTokenResource{} }

var _ resource.ResourceWithConfigure = (*apiTokenResource)(nil)

type apiTokenModel struct {
	ID         types.String `tfsdk:"id"`
	UserID     types.String `tfsdk:"user_id"`
	TTLSeconds types.Int64  `tfsdk:"ttl_seconds"`
	Token      types.String `tfsdk:"token"`
	Role       types.String `tfsdk:"role"`
	ExpiresAt  types.String `tfsdk:"expires_at"`
}

type apiTokenView struct {
	ID, UserID, Role, Status, ExpiresAt string
}

const apiTokenFields = `id userId role status expiresAt`

func (r *apiTokenResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_api_token"
}

func (r *apiTokenResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	keep := []planmodifier.String{stringplanmodifier.UseStateForUnknown()}
	resp.Schema = schema.Schema{
		Description: "An API token of a user. Its secret is in the state only (sensitive); destroying the token revokes it, and a token found revoked or expired is planned for creation again.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, PlanModifiers: keep, Description: "The token's id (not its secret)."},
			"user_id": schema.StringAttribute{Required: true, Description: "The user the token acts as.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()}},
			"ttl_seconds": schema.Int64Attribute{Optional: true, Description: "How long the token lives, in seconds; the server's default when left out.",
				PlanModifiers: []planmodifier.Int64{int64planmodifier.RequiresReplace()}},
			"token":      schema.StringAttribute{Computed: true, Sensitive: true, PlanModifiers: keep, Description: "The secret to send as a bearer token."},
			"role":       schema.StringAttribute{Computed: true, PlanModifiers: keep, Description: "The user's role, which the token carries."},
			"expires_at": schema.StringAttribute{Computed: true, PlanModifiers: keep, Description: "When the token stops working (RFC 3339)."},
		},
	}
}

func (r *apiTokenResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m apiTokenModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	in := map[string]any{"userId": m.UserID.ValueString(), "ttlSeconds": m.TTLSeconds.ValueInt64Pointer()}
	var out struct {
		CreateApiToken struct {
			APIToken apiTokenView `json:"apiToken"`
			Token    string
		}
	}
	if err := r.api.Do(ctx, `mutation($in: CreateApiTokenInput!) { createApiToken(input: $in) { apiToken { `+apiTokenFields+` } token cursor } }`,
		map[string]any{"in": in}, &out); err != nil {
		addAPIError(&resp.Diagnostics, "create the token", err, fieldPaths{"userId": path.Root("user_id"), "ttlSeconds": path.Root("ttl_seconds")})
		return
	}
	t := out.CreateApiToken.APIToken
	m.ID, m.Role, m.ExpiresAt = types.StringValue(t.ID), types.StringValue(t.Role), types.StringValue(t.ExpiresAt)
	m.Token = types.StringValue(out.CreateApiToken.Token)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *apiTokenResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m apiTokenModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	var out struct {
		APITokens struct {
			Edges []struct{ Node apiTokenView }
		} `json:"apiTokens"`
	}
	if err := r.api.Do(ctx, `query($u: ID, $cw: Cursor) { apiTokens(first: 500, filter: {userId: $u}, consistentWith: $cw) { edges { node { `+apiTokenFields+` } } } }`,
		map[string]any{"u": m.UserID.ValueString()}, &out); err != nil {
		addAPIError(&resp.Diagnostics, "read the token", err, nil)
		return
	}
	for _, e := range out.APITokens.Edges {
		if e.Node.ID == m.ID.ValueString() && e.Node.Status == "ACTIVE" {
			m.Role, m.ExpiresAt = types.StringValue(e.Node.Role), types.StringValue(e.Node.ExpiresAt)
			resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
			return
		}
	}
	resp.State.RemoveResource(ctx) // revoked, expired or gone
}

func (r *apiTokenResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m apiTokenModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *apiTokenResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var m apiTokenModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	err := r.api.Do(ctx, `mutation($id: ID!) { revokeApiToken(input: {tokenId: $id, reason: "destroyed by Terraform"}) { cursor } }`,
		map[string]any{"id": m.ID.ValueString()}, nil)
	if err != nil && !isNotFound(err) {
		addAPIError(&resp.Diagnostics, "revoke the token", err, nil)
	}
}
