package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// blueprintResult is what applyBlueprint and planBlueprint answer, with the
// API's field names.
type blueprintResult struct {
	Blueprint string `json:"blueprint"`
	TenantID  string `json:"tenantId"`
	Changed   bool   `json:"changed"`
	Cursor    string `json:"cursor"`
	Changes   []struct {
		Service   string   `json:"service"`
		ServiceID *string  `json:"serviceId"`
		Path      *string  `json:"path"`
		Steps     []string `json:"steps"`
		Detail    *string  `json:"detail"`
	} `json:"changes"`
}

const blueprintFields = `blueprint tenantId changed cursor changes { service serviceId path steps detail }`

// blueprintFlags are what apply and diff share.
type blueprintFlags struct {
	file, tenant string
	prune        bool
}

func (f *blueprintFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.file, "file", "f", "", "the blueprint, YAML or JSON (- reads standard input)")
	cmd.Flags().StringVar(&f.tenant, "tenant", "", "the tenant, when the file names none (tenant users: their own)")
	cmd.Flags().BoolVar(&f.prune, "prune", false, "also remove the services the blueprint declared before and no longer does (stopping them first)")
}

func (f *blueprintFlags) input(a *app) (map[string]any, error) {
	if f.file == "" {
		return nil, &usageError{errors.New("give the blueprint with -f FILE")}
	}
	doc, err := readInput(a, f.file)
	if err != nil {
		return nil, err
	}
	in := map[string]any{"document": string(doc), "prune": f.prune}
	if f.tenant != "" {
		in["tenantId"] = f.tenant
	}
	return in, nil
}

func newApplyCommand(a *app) *cobra.Command {
	var f blueprintFlags
	cmd := &cobra.Command{
		Use:   "apply -f FILE [--prune]",
		Short: "Make a tenant's services match a blueprint",
		Long: `Apply a blueprint: a file that declares a tenant's services. What is missing is
created (and started when declared running), what differs is updated, started or
stopped; with --prune, services the blueprint declared before and no longer does
are removed. Every service is checked first: a file with a mistake changes
nothing, and each problem is reported at its path in the file. Applying the same
file again records nothing. The orchestrator then does the work: follow it with
'cairn services --blueprint NAME'.

    apiVersion: cairn/v1
    kind: Blueprint
    metadata: {name: shop}
    tenant: acme
    services:
      - {name: web, template: static-site, version: 1.0.0, variables: {hostname: www, root: /srv}}
      - {name: cache, template: redis, running: false}

    cairn apply -f shop.yaml
    cairn diff -f shop.yaml --prune`,
		Args: argsNone,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBlueprint(cmd, a, f, "applyBlueprint", `mutation ($input: ApplyBlueprintInput!) { applyBlueprint(input: $input) { `+blueprintFields+` } }`)
		},
	}
	f.add(cmd)
	return cmd
}

func newDiffCommand(a *app) *cobra.Command {
	var f blueprintFlags
	cmd := &cobra.Command{
		Use:   "diff -f FILE [--prune]",
		Short: "Show what applying a blueprint would do, changing nothing",
		Long: `Show, service by service, what 'cairn apply' would do with the blueprint:
create, update (with the update's plan in counts), start, stop, remove
(--prune), or nothing. Exits 0 when nothing would change, 3 when something
would, 1 on an error (2 on a mistake on the command line).

    cairn diff -f shop.yaml`,
		Args: argsNone,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBlueprint(cmd, a, f, "planBlueprint", `query ($input: ApplyBlueprintInput!) { planBlueprint(input: $input) { `+blueprintFields+` } }`)
		},
	}
	f.add(cmd)
	return cmd
}

// DiffFoundError is a diff that found changes: exit status 3.
type DiffFoundError struct{ Blueprint string }

func (e *DiffFoundError) Error() string {
	return fmt.Sprintf("applying blueprint %s would change the services above", e.Blueprint)
}

func runBlueprint(cmd *cobra.Command, a *app, f blueprintFlags, field, query string) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	in, err := f.input(a)
	if err != nil {
		return err
	}
	var res map[string]blueprintResult
	qctx, cancel := context.WithTimeout(cmd.Context(), a.timeout)
	defer cancel()
	if err := c.Do(qctx, query, map[string]any{"input": in}, &res); err != nil {
		return err
	}
	r := res[field]
	if err := printBlueprint(cmd.OutOrStdout(), a, r, field == "planBlueprint"); err != nil {
		return err
	}
	if field == "planBlueprint" && r.Changed {
		return &DiffFoundError{Blueprint: r.Blueprint}
	}
	return nil
}

func printBlueprint(w io.Writer, a *app, r blueprintResult, plan bool) error {
	if a.structured() {
		return a.writeData(w, r)
	}
	rows := make([][]string, 0, len(r.Changes))
	for _, c := range r.Changes {
		name := c.Service
		if a.output == outputWide && c.ServiceID != nil {
			name += " (" + *c.ServiceID + ")"
		}
		steps := strings.ToLower(strings.Join(c.Steps, ", "))
		rows = append(rows, []string{name, steps, orDash(deref(c.Detail))})
	}
	if err := writeTable(w, []string{"SERVICE", "STEPS", "DETAIL"}, rows); err != nil {
		return err
	}
	switch {
	case !r.Changed:
		_, err := fmt.Fprintf(w, "\nBlueprint %s: the services of tenant %s are as declared; nothing to do.\n", r.Blueprint, r.TenantID)
		return err
	case plan:
		_, err := fmt.Fprintf(w, "\nBlueprint %s: 'cairn apply' would make these changes to tenant %s's services.\n", r.Blueprint, r.TenantID)
		return err
	}
	_, err := fmt.Fprintf(w, "\nBlueprint %s applied to tenant %s; the orchestrator is carrying it out ('cairn services --blueprint %s').\n", r.Blueprint, r.TenantID, r.Blueprint)
	return err
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
