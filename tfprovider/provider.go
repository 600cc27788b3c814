// Package tfprovider is terraform-provider-cairn: Terraform resources and
// data sources for Cairn's services, templates, tenants, users, tokens,
// locations, node labels and schedules, all through the GraphQL API with
// the project's own client. One file per resource and data source.
package tfprovider

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"cairn/graph/client"
	"cairn/internal/cliconfig"
)

// The environment variables the provider reads when its settings are left
// out.
const (
	EndpointEnv = "CAIRN_ENDPOINT"
	TokenEnv    = "CAIRN_TOKEN"
)

// Address is the provider's source address: configurations name it in
// required_providers, and a CLI configuration's dev_overrides points it at a
// local build.
const Address = "terraform.local/cairn/cairn"

// DefaultRequestTimeout bounds one API request.
const DefaultRequestTimeout = 30 * time.Second

// Provider is the cairn provider.
type Provider struct {
	version string
	getenv  func(string) string
}

// New returns the provider factory for a build version.
func New(version string) func() provider.Provider {
	return func() provider.Provider { return &Provider{version: version, getenv: os.Getenv} }
}

type providerModel struct {
	Endpoint           types.String `tfsdk:"endpoint"`
	Token              types.String `tfsdk:"token"`
	InsecureSkipVerify types.Bool   `tfsdk:"insecure_skip_verify"`
	CAFile             types.String `tfsdk:"ca_file"`
	RequestTimeout     types.String `tfsdk:"request_timeout"`
}

func (p *Provider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "cairn"
	resp.Version = p.version
}

func (p *Provider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "Manages services, templates, tenants, users, API tokens, locations, node labels and schedules of a Cairn control plane through its GraphQL API.",
		Attributes: map[string]schema.Attribute{
			"endpoint": schema.StringAttribute{Optional: true,
				Description: "The server's URL (http://host:port), or several replicas' separated by commas. Default: CAIRN_ENDPOINT, then the server `cairn login` stored."},
			"token": schema.StringAttribute{Optional: true, Sensitive: true,
				Description: "An API token. Default: CAIRN_TOKEN, then the token `cairn login` stored."},
			"insecure_skip_verify": schema.BoolAttribute{Optional: true,
				Description: "Accept any TLS certificate of the server (for tests only)."},
			"ca_file": schema.StringAttribute{Optional: true,
				Description: "A PEM file of the certificate authorities to trust for the server's TLS certificate, beside the system's."},
			"request_timeout": schema.StringAttribute{Optional: true,
				Description: "How long one API request may take, as a Go duration (\"30s\", \"2m\"). Default 30s."},
		},
	}
}

func (p *Provider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var m providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if m.Endpoint.IsUnknown() || m.Token.IsUnknown() {
		// Known only after apply (another resource's attribute): nothing
		// can be read or planned against the server yet.
		return
	}
	endpoint, token, err := p.login(m.Endpoint.ValueString(), m.Token.ValueString())
	if err != nil {
		resp.Diagnostics.AddWarning("Cannot read the cairn CLI's login", err.Error())
	}
	if endpoint == "" {
		resp.Diagnostics.AddAttributeError(path.Root("endpoint"), "No Cairn endpoint",
			"Set endpoint in the provider block, or "+EndpointEnv+", or log in with `cairn login --server URL`.")
	}
	if token == "" {
		resp.Diagnostics.AddAttributeError(path.Root("token"), "No Cairn token",
			"Set token in the provider block, or "+TokenEnv+", or log in with `cairn login --token TOKEN`.")
	}
	timeout := DefaultRequestTimeout
	if s := m.RequestTimeout.ValueString(); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			resp.Diagnostics.AddAttributeError(path.Root("request_timeout"), "Invalid request timeout",
				fmt.Sprintf("%q is not a positive duration such as \"30s\" or \"2m\".", s))
		}
		timeout = d
	}
	tlsConfig := &tls.Config{InsecureSkipVerify: m.InsecureSkipVerify.ValueBool()} //nolint:gosec // asked for, for tests
	if f := m.CAFile.ValueString(); f != "" {
		pem, err := os.ReadFile(f)
		pool, _ := x509.SystemCertPool()
		if pool == nil {
			pool = x509.NewCertPool()
		}
		if err != nil || !pool.AppendCertsFromPEM(pem) {
			resp.Diagnostics.AddAttributeError(path.Root("ca_file"), "Unusable CA file",
				fmt.Sprintf("%s holds no PEM certificate (%v).", f, err))
		}
		tlsConfig.RootCAs = pool
	}
	if resp.Diagnostics.HasError() {
		return
	}
	hc := &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, TLSClientConfig: tlsConfig}}
	api := &API{client: client.New(strings.TrimRight(endpoint, "/"), token, hc), timeout: timeout}
	resp.ResourceData, resp.DataSourceData = api, api
}

// login completes the endpoint and token the configuration gives from the
// environment, then from the login the cairn CLI stored.
func (p *Provider) login(endpoint, token string) (string, string, error) {
	if endpoint == "" {
		endpoint = p.getenv(EndpointEnv)
	}
	if token == "" {
		token = p.getenv(TokenEnv)
	}
	if endpoint != "" && token != "" {
		return endpoint, token, nil
	}
	path, err := cliconfig.Path(p.getenv)
	if err != nil {
		return endpoint, token, err
	}
	stored, err := cliconfig.Read(path)
	if endpoint == "" {
		endpoint = stored.Server
	}
	if token == "" {
		token = stored.Token
	}
	return endpoint, token, err
}

func (p *Provider) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{
		newServiceResource, newTemplateResource, newTenantResource, newUserResource, newAPITokenResource,
		newLocationResource, newNodeLabelsResource, newScheduleResource,
	}
}

func (p *Provider) DataSources(context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{
		newTemplateDataSource, newNodesDataSource, newServiceDataSource, newLocationDataSource,
	}
}
