package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"cairn/graph/client"
)

// updatePlan is what planServiceUpdate answers, with the API's field names.
type updatePlan struct {
	Revision    int    `json:"revision"`
	FromVersion string `json:"fromVersion"`
	ToVersion   string `json:"toVersion"`
	Variables   []struct {
		Name string          `json:"name"`
		Old  json.RawMessage `json:"old"`
		New  json.RawMessage `json:"new"`
	} `json:"variables"`
	Changes []struct {
		Name       string   `json:"name"`
		ResourceID string   `json:"resourceId"`
		Plugin     string   `json:"plugin"`
		Type       string   `json:"type"`
		Action     string   `json:"action"`
		Reasons    []string `json:"reasons"`
		Properties []struct {
			Path string          `json:"path"`
			Old  json.RawMessage `json:"old"`
			New  json.RawMessage `json:"new"`
		} `json:"properties"`
	} `json:"changes"`
	Creates  int  `json:"creates"`
	Updates  int  `json:"updates"`
	Replaces int  `json:"replaces"`
	Destroys int  `json:"destroys"`
	NoChange bool `json:"noChange"`
}

const updatePlanFields = `revision fromVersion toVersion variables { name old new }
  changes { name resourceId plugin type action reasons properties { path old new } }
  creates updates replaces destroys noChange`

const (
	planServiceUpdateQuery = `query ($input: UpdateServiceInput!) { planServiceUpdate(input: $input) { ` + updatePlanFields + ` } }`
	updateServiceMutation  = `mutation ($input: UpdateServiceInput!) {
  updateService(input: $input) { service { id status revision } plan { ` + updatePlanFields + ` } cursor duplicate }
}`
)

// updateFlags are what plan and update share: the service and its new
// version and variables.
type updateFlags struct {
	version, varsFile string
	vars              []string
}

func (u *updateFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&u.version, "version", "", "the template version to move to (default: the current one)")
	cmd.Flags().StringArrayVar(&u.vars, "var", nil, "a variable's new value, KEY=VALUE (repeat for each; null puts it back to its default)")
	cmd.Flags().StringVar(&u.varsFile, "vars-file", "", "a JSON object of variable values (--var wins)")
}

// input builds the API's UpdateServiceInput, typing --var values by the
// variables of the version the service moves to.
func (u *updateFlags) input(ctx context.Context, a *app, c *client.Client, service string) (map[string]any, error) {
	ref, err := resolveService(ctx, a, c, service)
	if err != nil {
		return nil, err
	}
	s, err := fetchService(ctx, a, c, ref.ID, "")
	if err != nil {
		return nil, err
	}
	version := u.version
	if version == "" {
		version = s.TemplateVersion
	}
	values, err := serviceVariables(ctx, a, c, s.TemplateName, version, u.varsFile, u.vars)
	if err != nil {
		return nil, err
	}
	in := map[string]any{"serviceId": s.ID, "variables": values}
	if u.version != "" {
		in["templateVersion"] = u.version
	}
	return in, nil
}

func newServicePlanCommand(a *app) *cobra.Command {
	var u updateFlags
	cmd := &cobra.Command{
		Use:   "plan SERVICE [--version VERSION] [--var KEY=VALUE]...",
		Short: "Show what an update would do, changing nothing",
		Long: `Show what updating a service to another template version, or other
variables, would do: each resource created, updated in place, replaced or
destroyed, and the properties and variables that change (sensitive values
masked). Variables not given keep their value.

    cairn services plan my-site --var title=Open
    cairn services plan my-site --version 1.1.0`,
		Args: argsOne("service (id, name, or TENANT/NAME)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			in, err := u.input(cmd.Context(), a, c, args[0])
			if err != nil {
				return err
			}
			var res struct {
				Plan updatePlan `json:"planServiceUpdate"`
			}
			qctx, cancel := context.WithTimeout(cmd.Context(), a.timeout)
			defer cancel()
			if err := c.Do(qctx, planServiceUpdateQuery, map[string]any{"input": in}, &res); err != nil {
				return err
			}
			return printUpdatePlan(cmd.OutOrStdout(), a, res.Plan)
		},
	}
	u.add(cmd)
	return cmd
}

func newServiceUpdateCommand(a *app) *cobra.Command {
	var (
		u         updateFlags
		commandID string
		w         waitFlags
	)
	cmd := &cobra.Command{
		Use:   "update SERVICE [--version VERSION] [--var KEY=VALUE]...",
		Short: "Move a service to another template version or other variables",
		Long: `Update a running, stopped or registered service: the plan (as
'cairn services plan' shows it) is printed and applied, in dependency order.
If a step fails, the service goes back to the revision it had, and says why.
An update that changes nothing records nothing.

    cairn services update my-site --var title=Open --wait`,
		Args: argsOne("service (id, name, or TENANT/NAME)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			in, err := u.input(cmd.Context(), a, c, args[0])
			if err != nil {
				return err
			}
			if commandID != "" {
				in["commandId"] = commandID
			}
			var res struct {
				UpdateService struct {
					Service struct {
						ID       string `json:"id"`
						Status   string `json:"status"`
						Revision int    `json:"revision"`
					} `json:"service"`
					Plan   updatePlan `json:"plan"`
					Cursor string     `json:"cursor"`
				} `json:"updateService"`
			}
			qctx, cancel := context.WithTimeout(cmd.Context(), a.timeout)
			err = c.Do(qctx, updateServiceMutation, map[string]any{"input": in}, &res)
			cancel()
			if err != nil {
				return err
			}
			p := res.UpdateService
			if !a.structured() {
				if err := printUpdatePlan(cmd.ErrOrStderr(), a, p.Plan); err != nil {
					return err
				}
			}
			return afterRequest(cmd, a, c, p.Service.ID, p.Cursor, w)
		},
	}
	u.add(cmd)
	cmd.Flags().StringVar(&commandID, "command-id", "", "an id of your choosing: running the same command again with it updates once")
	w.add(cmd, "the update has been applied (or gone back)")
	return cmd
}

func printUpdatePlan(w io.Writer, a *app, p updatePlan) error {
	if a.structured() {
		return a.writeData(w, p)
	}
	if p.NoChange {
		_, err := fmt.Fprintf(w, "No changes: the service is at revision %d of %s with these values.\n", p.Revision, p.FromVersion)
		return err
	}
	rows := [][]string{{"REVISION", fmt.Sprintf("%d → %d", p.Revision, p.Revision+1)}}
	if p.FromVersion != p.ToVersion {
		rows = append(rows, []string{"VERSION", p.FromVersion + " → " + p.ToVersion})
	}
	for _, v := range p.Variables {
		rows = append(rows, []string{"VARIABLE", fmt.Sprintf("%s: %s → %s", v.Name, shownValue(v.Old), shownValue(v.New))})
	}
	if err := writeRows(w, rows); err != nil {
		return err
	}
	fmt.Fprintln(w)
	var table [][]string
	for _, c := range p.Changes {
		if c.Action == "KEEP" && a.output != outputWide {
			continue
		}
		name := c.Name
		if a.output == outputWide {
			name += " (" + c.ResourceID + ")"
		}
		table = append(table, []string{strings.ToLower(c.Action), name, c.Plugin + " " + c.Type, orDash(strings.Join(c.Reasons, "; "))})
		for _, pc := range c.Properties {
			table = append(table, []string{"", "  " + pc.Path, shownValue(pc.Old) + " → " + shownValue(pc.New), ""})
		}
	}
	if err := writeTable(w, []string{"ACTION", "RESOURCE", "PLUGIN TYPE", "WHY"}, table); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\nPlan: %d to create, %d to update in place, %d to replace, %d to destroy.\n",
		p.Creates, p.Updates, p.Replaces, p.Destroys)
	return err
}

// shownValue prints a JSON value on one line, shortened; absent is "-".
func shownValue(v json.RawMessage) string {
	s := strings.TrimSpace(string(v))
	if s == "" || s == "null" {
		return "-"
	}
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}
