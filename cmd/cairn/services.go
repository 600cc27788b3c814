package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"cairn/domain"
	"cairn/graph/client"
	"cairn/internal/ptr"
)

// withServiceCommands adds the lifecycle commands (create, retry, start,
// stop, remove, show) under the services list command.
func withServiceCommands(a *app, cmd *cobra.Command) *cobra.Command {
	cmd.AddCommand(
		newServiceCreateCommand(a),
		newServiceRequestCommand(a, "retry", "retryService", "Deploy again a service whose registration failed and was rolled back (after a placement failure, once a node has room)"),
		newServiceRequestCommand(a, "start", "startService", "Start a service's resources, in dependency order"),
		newServiceRequestCommand(a, "stop", "stopService", "Stop a service's resources, in reverse dependency order"),
		newServiceRequestCommand(a, "remove", "removeService", "Destroy every resource of a service"),
		newServiceShowCommand(a),
		newServicePlanCommand(a),
		newServiceUpdateCommand(a),
	)
	return cmd
}

type serviceResource struct {
	ID        string          `json:"id"`
	Name      *string         `json:"name"`
	Plugin    string          `json:"plugin"`
	Type      string          `json:"type"`
	Status    string          `json:"status"`
	FailedIn  *string         `json:"failedIn"`
	Error     *string         `json:"error"`
	Outputs   json.RawMessage `json:"outputs"`
	DependsOn []string        `json:"dependsOn"`
	UpdatedAt *time.Time      `json:"updatedAt"`
}

type serviceDetail struct {
	ID              string            `json:"id"`
	TenantID        string            `json:"tenantId"`
	Tenant          *named            `json:"tenant"`
	Name            string            `json:"name"`
	TemplateName    string            `json:"templateName"`
	TemplateVersion string            `json:"templateVersion"`
	Variables       json.RawMessage   `json:"variables"`
	Status          string            `json:"status"`
	FailedIn        *string           `json:"failedIn"`
	Cause           *string           `json:"cause"`
	Remaining       []string          `json:"remaining"`
	Outputs         json.RawMessage   `json:"outputs"`
	Revision        int               `json:"revision"`
	AllowedActions  []string          `json:"allowedActions"`
	RequestedAt     *time.Time        `json:"requestedAt"`
	UpdatedAt       *time.Time        `json:"updatedAt"`
	Resources       []serviceResource `json:"resources"`
	Events          []serviceEvent    `json:"lastEvents,omitempty"`
}

type serviceEvent struct {
	Cursor   string     `json:"cursor"`
	StreamID string     `json:"streamId"`
	Type     string     `json:"type"`
	Time     *time.Time `json:"time"`
	Metadata struct {
		Actor *string `json:"actor"`
	} `json:"metadata"`
}

const serviceFields = `id tenantId tenant { name } name templateName templateVersion variables status failedIn cause remaining outputs
  revision allowedActions requestedAt updatedAt
  resources { id name plugin type status failedIn error outputs dependsOn updatedAt }`

const (
	serviceQuery = `query ($id: ID!, $cw: Cursor) { service(id: $id, consistentWith: $cw) { ` + serviceFields + ` } }`

	createServiceMutation = `mutation ($input: CreateServiceInput!) {
  createService(input: $input) { service { id status } cursor duplicate }
}`

	templateVariablesQuery = `query ($name: String!, $version: String!) {
  template(name: $name, version: $version) { id status variables { name type sensitive } }
}`

	latestTemplateQuery = `query ($name: String!) {
  templates(first: 1, filter: {name: $name, status: [PUBLISHED], latestOnly: true}) { edges { node { version } } }
}`

	serviceEventsQuery = `query ($after: Cursor, $filter: EventFilter) {
  events(first: 500, after: $after, filter: $filter) {
    edges { node { cursor streamId type time metadata { actor } } }
    pageInfo { hasNextPage endCursor }
  }
}`
)

// busy are the statuses in which the orchestrator is still at work.
var busy = []string{"REGISTERING", "ROLLING_BACK", "STARTING", "STOPPING", "REMOVING", "REPAIRING", "UPDATING", "REVERTING"}

// failedStatuses end a step without success.
var failedStatuses = []string{"FAILED", "ROLLBACK_FAILED", "MANUAL_CLEANUP_REQUIRED"}

// ServiceFailedError reports a step that ended without success.
type ServiceFailedError struct {
	ID        string
	Status    string
	FailedIn  string
	Cause     string
	Remaining []string
}

func (e *ServiceFailedError) Error() string {
	msg := fmt.Sprintf("service %s is %s", e.ID, strings.ToLower(e.Status))
	if e.FailedIn != "" {
		msg += " (in " + strings.ToLower(e.FailedIn) + ")"
	}
	if e.Cause != "" {
		msg += ": " + e.Cause
	}
	if len(e.Remaining) > 0 {
		msg += fmt.Sprintf("; resources left to clean up: %s (remove the service again, or mark it cleaned up once done by hand)", strings.Join(e.Remaining, ", "))
	}
	return msg
}

type waitFlags struct {
	wait    bool
	timeout time.Duration
}

func (w *waitFlags) add(cmd *cobra.Command, what string) {
	cmd.Flags().BoolVar(&w.wait, "wait", false, "wait until "+what+", and fail if it does not succeed")
	cmd.Flags().DurationVar(&w.timeout, "wait-timeout", 30*time.Minute, "how long --wait waits")
}

func newServiceCreateCommand(a *app) *cobra.Command {
	var (
		tmpl, name, tenantID, flavor, varsFile, commandID string
		vars                                              []string
		w                                                 waitFlags
	)
	cmd := &cobra.Command{
		Use:   "create --template NAME[@VERSION] [--var KEY=VALUE]...",
		Short: "Deploy a template for a tenant",
		Long: `Deploy a published template version: the service is registered and the
orchestrator creates its resources, level by level. Without @VERSION the
newest published version is used. Values are given as text and converted to
each variable's declared type (numbers, booleans, and JSON for objects and
arrays); a flavor fills in what is not given, then the defaults.

    cairn services create --template static-site@1.0.0 --name my-site \
      --var hostname=www --var root=/srv/sites --var dns_token=s3cret --wait`,
		Args: argsNone,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if tmpl == "" {
				return &usageError{errors.New("give the template with --template NAME[@VERSION]")}
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			tname, version, _ := strings.Cut(tmpl, "@")
			if version == "" {
				if version, err = latestVersion(ctx, a, c, tname); err != nil {
					return err
				}
			}
			values, err := serviceVariables(ctx, a, c, tname, version, varsFile, vars)
			if err != nil {
				return err
			}
			if name == "" {
				name = tname
			}
			if tenantID != "" {
				t, err := resolveNamed(ctx, a, c, "tenant", tenantID)
				if err != nil {
					return err
				}
				tenantID = t.ID
			}
			in := map[string]any{"name": name, "templateName": tname, "templateVersion": version, "variables": values}
			for k, v := range map[string]string{"tenantId": tenantID, "flavor": flavor, "commandId": commandID} {
				if v != "" {
					in[k] = v
				}
			}
			var res struct {
				CreateService struct {
					Service   struct{ ID, Status string } `json:"service"`
					Cursor    string                      `json:"cursor"`
					Duplicate bool                        `json:"duplicate"`
				} `json:"createService"`
			}
			qctx, cancel := context.WithTimeout(ctx, a.timeout)
			err = c.Do(qctx, createServiceMutation, map[string]any{"input": in}, &res)
			cancel()
			if err != nil {
				return err
			}
			p := res.CreateService
			return afterRequest(cmd, a, c, p.Service.ID, p.Cursor, w)
		},
	}
	cmd.Flags().StringVar(&tmpl, "template", "", "template to deploy, NAME@VERSION (or NAME for its newest published version)")
	cmd.Flags().StringVar(&name, "name", "", "the service's name (default: the template's)")
	cmd.Flags().StringVar(&tenantID, "tenant", "", "tenant to deploy for, by id or name (tenant users deploy for their own)")
	cmd.Flags().StringVar(&flavor, "flavor", "", "one of the template's flavors")
	cmd.Flags().StringArrayVar(&vars, "var", nil, "a variable's value, KEY=VALUE (repeat for each)")
	cmd.Flags().StringVar(&varsFile, "vars-file", "", "a JSON object of variable values (--var wins)")
	cmd.Flags().StringVar(&commandID, "command-id", "", "an id of your choosing: running the same command again with it deploys once")
	w.add(cmd, "the resources are created")
	return cmd
}

func latestVersion(ctx context.Context, a *app, c *client.Client, name string) (string, error) {
	var res struct {
		Templates struct {
			Edges []struct {
				Node struct{ Version string } `json:"node"`
			} `json:"edges"`
		} `json:"templates"`
	}
	if err := a.do(ctx, c, latestTemplateQuery, map[string]any{"name": name}, &res); err != nil {
		return "", err
	}
	if len(res.Templates.Edges) == 0 {
		return "", fmt.Errorf("template %q has no published version", name)
	}
	return res.Templates.Edges[0].Node.Version, nil
}

// serviceVariables turns --vars-file and --var into a JSON object, each
// value converted to its variable's declared type.
func serviceVariables(ctx context.Context, a *app, c *client.Client, name, version, file string, terms []string) (map[string]json.RawMessage, error) {
	values := map[string]json.RawMessage{}
	if file != "" {
		b, err := readInput(a, file)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &values); err != nil {
			return nil, &usageError{fmt.Errorf("--vars-file %s: must hold a JSON object of variable values: %w", file, err)}
		}
	}
	if len(terms) == 0 {
		return values, nil
	}
	var res struct {
		Template *struct {
			Variables []struct {
				Name string `json:"name"`
				Type string `json:"type"`
			} `json:"variables"`
		} `json:"template"`
	}
	qctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	if err := c.Do(qctx, templateVariablesQuery, map[string]any{"name": name, "version": version}, &res); err != nil {
		return nil, err
	}
	if res.Template == nil {
		return nil, fmt.Errorf("template %s@%s does not exist", name, version)
	}
	types := map[string]string{}
	for _, v := range res.Template.Variables {
		types[v.Name] = v.Type
	}
	for _, t := range terms {
		k, v, ok := strings.Cut(t, "=")
		if !ok || k == "" {
			return nil, &usageError{fmt.Errorf("--var %q: write it as KEY=VALUE", t)}
		}
		value, err := client.VariableValue(types[k], v)
		if err != nil {
			return nil, &usageError{fmt.Errorf("--var %s: %w", k, err)}
		}
		values[k] = value
	}
	return values, nil
}

func newServiceRequestCommand(a *app, verb, mutation, short string) *cobra.Command {
	var (
		commandID string
		w         waitFlags
	)
	cmd := &cobra.Command{
		Use:   verb + " SERVICE",
		Short: short,
		Long: short + `. The command is refused, naming the service's state, when
that state does not allow it (a running service is stopped before it is
removed, say). With --wait it returns once the orchestrator has finished.

    cairn services ` + verb + ` my-site --wait
    cairn services ` + verb + ` acme/my-site`,
		Args: argsOne("service (id, name, or TENANT/NAME)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			ref, err := resolveService(cmd.Context(), a, c, args[0])
			if err != nil {
				return err
			}
			in := map[string]any{"serviceId": ref.ID}
			if commandID != "" {
				in["commandId"] = commandID
			}
			var res map[string]struct {
				Service struct{ ID, Status string } `json:"service"`
				Cursor  string                      `json:"cursor"`
			}
			q := fmt.Sprintf(`mutation ($input: ServiceCommandInput!) { %s(input: $input) { service { id status } cursor } }`, mutation)
			qctx, cancel := context.WithTimeout(cmd.Context(), a.timeout)
			err = c.Do(qctx, q, map[string]any{"input": in}, &res)
			cancel()
			if err != nil {
				return err
			}
			p := res[mutation]
			return afterRequest(cmd, a, c, p.Service.ID, p.Cursor, w)
		},
	}
	cmd.Flags().StringVar(&commandID, "command-id", "", "an id of your choosing: running the same command again with it acts once")
	w.add(cmd, "the orchestrator has finished")
	return cmd
}

// afterRequest shows the service once a request is recorded, after waiting
// for the orchestrator when asked to.
func afterRequest(cmd *cobra.Command, a *app, c *client.Client, id, cursor string, w waitFlags) error {
	ctx := cmd.Context()
	if !w.wait {
		s, err := fetchService(ctx, a, c, id, cursor)
		if err != nil {
			return err
		}
		return printService(cmd.OutOrStdout(), a, s)
	}
	wctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	s, err := waitSettled(wctx, a, c, id, cursor, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	if err := printService(cmd.OutOrStdout(), a, s); err != nil {
		return err
	}
	if slices.Contains(failedStatuses, s.Status) {
		return &ServiceFailedError{ID: s.ID, Status: s.Status, FailedIn: ptr.Value(s.FailedIn), Cause: ptr.Value(s.Cause), Remaining: s.Remaining}
	}
	return nil
}

func fetchService(ctx context.Context, a *app, c *client.Client, id, cursor string) (serviceDetail, error) {
	var res struct {
		Service *serviceDetail `json:"service"`
	}
	vars := map[string]any{"id": id}
	if cursor != "" {
		vars["cw"] = cursor
	}
	qctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	if err := c.Do(qctx, serviceQuery, vars, &res); err != nil {
		return serviceDetail{}, err
	}
	if res.Service == nil {
		return serviceDetail{}, fmt.Errorf("service %q does not exist, or is not yours to see", id)
	}
	return *res.Service, nil
}

// waitSettled polls the service until the orchestrator is done with it,
// telling each status it passes through on progress.
func waitSettled(ctx context.Context, a *app, c *client.Client, id, cursor string, progress io.Writer) (serviceDetail, error) {
	last := ""
	for {
		s, err := fetchService(ctx, a, c, id, cursor)
		if err != nil {
			if ctx.Err() != nil {
				return s, fmt.Errorf("service %s is still %s: stopped waiting (%w)", id, strings.ToLower(last), ctx.Err())
			}
			return s, err
		}
		if s.Status != last && !a.structured() {
			fmt.Fprintf(progress, "service %s: %s\n", id, strings.ToLower(s.Status))
		}
		last = s.Status
		if !slices.Contains(busy, s.Status) {
			return s, nil
		}
		select {
		case <-ctx.Done():
			return s, fmt.Errorf("service %s is still %s: stopped waiting (%w)", id, strings.ToLower(last), ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func newServiceShowCommand(a *app) *cobra.Command {
	var events int
	cmd := &cobra.Command{
		Use:   "show SERVICE",
		Short: "Show a service: state, resources, outputs and last events",
		Long: `Show a service: its state, template, revision, the resources by name with
where they run, its outputs and its last events. SERVICE is its id, its name,
or TENANT/NAME when several tenants have a service of that name.

    cairn services show my-site
    cairn services show acme/my-site --events 30`,
		Args: argsOne("service (id, name, or TENANT/NAME)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			ref, err := resolveService(cmd.Context(), a, c, args[0])
			if err != nil {
				return err
			}
			s, err := fetchService(cmd.Context(), a, c, ref.ID, "")
			if err != nil {
				return err
			}
			if events > 0 {
				if s.Events, err = lastEvents(cmd.Context(), a, c, s, events); err != nil {
					return err
				}
			}
			return printService(cmd.OutOrStdout(), a, s)
		},
	}
	cmd.Flags().IntVar(&events, "events", 15, "how many of the last events of the service and its resources to show")
	return cmd
}

// lastEvents reads the events of the service's and its resources' streams
// and keeps the last n.
func lastEvents(ctx context.Context, a *app, c *client.Client, s serviceDetail, n int) ([]serviceEvent, error) {
	streams := []string{domain.StreamID(domain.ServiceStream, s.ID)}
	for _, r := range s.Resources {
		streams = append(streams, domain.StreamID(domain.ResourceStream, r.ID))
	}
	var out []serviceEvent
	var after *string
	for {
		var res struct {
			Events struct {
				Edges []struct {
					Node serviceEvent `json:"node"`
				} `json:"edges"`
				PageInfo pageInfo `json:"pageInfo"`
			} `json:"events"`
		}
		qctx, cancel := context.WithTimeout(ctx, a.timeout)
		err := c.Do(qctx, serviceEventsQuery, map[string]any{"after": after, "filter": map[string]any{"streamIds": streams}}, &res)
		cancel()
		if err != nil {
			return nil, err
		}
		for _, e := range res.Events.Edges {
			out = append(out, e.Node)
		}
		if len(out) > n {
			out = out[len(out)-n:]
		}
		if !res.Events.PageInfo.HasNextPage || res.Events.PageInfo.EndCursor == nil || len(res.Events.Edges) == 0 {
			return out, nil
		}
		after = res.Events.PageInfo.EndCursor
	}
}

func printService(w io.Writer, a *app, s serviceDetail) error {
	if a.structured() {
		return a.writeData(w, s)
	}
	status := strings.ToLower(s.Status)
	if s.FailedIn != nil {
		status += " (in " + strings.ToLower(*s.FailedIn) + ")"
	}
	rows := [][]string{
		{"SERVICE", s.ID + "  " + s.Name},
		{"TENANT", nameOr(s.TenantID, s.Tenant)},
		{"TEMPLATE", fmt.Sprintf("%s@%s (revision %d)", s.TemplateName, s.TemplateVersion, max(s.Revision, 1))},
		{"STATUS", status},
	}
	if s.Cause != nil && *s.Cause != "" {
		rows = append(rows, []string{"CAUSE", *s.Cause})
	}
	if len(s.Remaining) > 0 {
		rows = append(rows, []string{"REMAINING", strings.Join(s.Remaining, ", ")})
	}
	rows = append(rows, []string{"ALLOWED", orDash(strings.Join(s.AllowedActions, ", "))})
	rows = append(rows, []string{"UPDATED", when(s.UpdatedAt)})
	for _, kv := range flatten(s.Outputs) {
		rows = append(rows, []string{"OUTPUT", kv})
	}
	if err := writeRows(w, rows); err != nil {
		return err
	}
	if len(s.Resources) > 0 {
		fmt.Fprintln(w)
		table := make([][]string, len(s.Resources))
		for i, r := range s.Resources {
			st := strings.ToLower(r.Status)
			if r.FailedIn != nil {
				st += " (in " + strings.ToLower(*r.FailedIn) + ")"
			}
			detail := strings.Join(flatten(r.Outputs), " ")
			if r.Error != nil && *r.Error != "" {
				detail = "error: " + *r.Error
			}
			name := r.ID
			if r.Name != nil && *r.Name != "" {
				name = *r.Name
				if a.output == outputWide {
					name += " (" + r.ID + ")"
				}
			}
			table[i] = []string{name, r.Plugin + " " + r.Type, st, orDash(detail)}
		}
		if err := writeTable(w, []string{"RESOURCE", "PLUGIN TYPE", "STATUS", "OUTPUTS"}, table); err != nil {
			return err
		}
	}
	if len(s.Events) > 0 {
		fmt.Fprintln(w)
		table := make([][]string, len(s.Events))
		for i, e := range s.Events {
			table[i] = []string{when(e.Time), e.StreamID, e.Type, orDash(ptr.Value(e.Metadata.Actor))}
		}
		return writeTable(w, []string{"TIME", "STREAM", "EVENT", "ACTOR"}, table)
	}
	return nil
}

// writeRows prints label/value pairs without a header.
func writeRows(w io.Writer, rows [][]string) error {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%-10s %s\n", r[0], r[1])
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// flatten shows a JSON object as sorted key=value terms.
func flatten(raw json.RawMessage) []string {
	var m map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil {
		return nil
	}
	out := make([]string, 0, len(m))
	for k, v := range m {
		var s string
		if json.Unmarshal(v, &s) != nil {
			s = string(v)
		}
		out = append(out, k+"="+s)
	}
	sort.Strings(out)
	return out
}
