package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"cairn/internal/ptr"
)

type templateRow struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Version string `json:"version"`
	Vendor  string `json:"vendor"`
	Status  string `json:"status"`
	Digest  string `json:"digest"`
}

type templatePayload struct {
	Template  templateRow `json:"template"`
	Cursor    string      `json:"cursor"`
	Duplicate bool        `json:"duplicate"`
}

const (
	registerTemplateMutation = `mutation ($input: RegisterTemplateInput!) {
  registerTemplate(input: $input) { template { id name version vendor status digest } cursor duplicate }
}`
	publishTemplateMutation = `mutation ($input: PublishTemplateInput!) {
  publishTemplate(input: $input) { template { id name version vendor status digest } cursor duplicate }
}`
)

// catalogRow is a template version as the catalog lists it.
type catalogRow struct {
	ID          string     `json:"id"`
	Name        string     `json:"name"`
	Version     string     `json:"version"`
	Vendor      string     `json:"vendor"`
	Category    *string    `json:"category"`
	Description *string    `json:"description"`
	Status      string     `json:"status"`
	PublishedAt *time.Time `json:"publishedAt"`
}

const catalogFields = `id name version vendor category description status publishedAt`

// newTemplatesCommand lists the catalog and groups the vendor's commands.
func newTemplatesCommand(a *app) *cobra.Command {
	var (
		name, vendor, category string
		statuses               []string
		all                    bool
		limit                  int
	)
	cmd := &cobra.Command{
		Use:   "templates",
		Short: "List the catalog; show and publish service descriptors",
		Long: `List the catalog's templates: the latest version of each (--all for every
version), filtered by name, vendor, category or status.

    cairn templates
    cairn templates --vendor Example --all
    cairn templates show static-site
    cairn templates publish -f examples/static-site/service.yaml`,
		Args: argsNone,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			filter := map[string]any{"latestOnly": !all}
			withOptional(withOptional(withOptional(filter, "name", name), "vendor", vendor), "category", category)
			if s := enumValues(statuses); len(s) > 0 {
				filter["status"] = s
			}
			rows, err := fetchList[catalogRow](cmd.Context(), a, c, `query ($first: Int, $after: String, $filter: TemplateFilter) {
  templates(first: $first, after: $after, filter: $filter) { edges { node { `+catalogFields+` } } pageInfo { hasNextPage endCursor } } }`,
				"templates", map[string]any{"filter": filter}, limit)
			if err != nil {
				return err
			}
			if a.structured() {
				return a.writeData(cmd.OutOrStdout(), nonNil(rows))
			}
			table := make([][]string, len(rows))
			for i, t := range rows {
				table[i] = []string{t.Name, t.Version, t.Vendor, orDash(ptr.Value(t.Category)), t.Status, when(t.PublishedAt), firstLineOf(ptr.Value(t.Description), 60)}
			}
			return writeTable(cmd.OutOrStdout(), []string{"NAME", "VERSION", "VENDOR", "CATEGORY", "STATUS", "PUBLISHED", "DESCRIPTION"}, table)
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "name", "", "only templates whose name contains this")
	f.StringVar(&vendor, "vendor", "", "only this vendor's templates")
	f.StringVar(&category, "category", "", "only templates of this category")
	f.StringSliceVar(&statuses, "status", nil, "only versions in these states (validated, published, deprecated)")
	f.BoolVar(&all, "all", false, "every version, not only the latest of each template")
	f.IntVar(&limit, "limit", 0, "at most this many (0: all)")
	cmd.AddCommand(newTemplatesShowCommand(a), newTemplatesPublishCommand(a))
	return cmd
}

func newTemplatesShowCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "show NAME[@VERSION]",
		Short: "Show a template version: its variables and its descriptor",
		Long: `Show a template version (the latest published one when no version is
given): its status, its variables with their types, defaults and rules, and
with -o json or -o yaml the whole descriptor.

    cairn templates show static-site
    cairn templates show static-site@1.2.0 -o yaml`,
		Args: argsOne("template name, or NAME@VERSION"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			name, version, pinned := strings.Cut(args[0], "@")
			if !pinned {
				if version, err = latestVersion(cmd.Context(), a, c, name); err != nil {
					return err
				}
			}
			var res struct {
				Template *struct {
					catalogRow
					Digest     string          `json:"digest"`
					Descriptor json.RawMessage `json:"descriptor"`
					Variables  []struct {
						Name        string          `json:"name"`
						Type        string          `json:"type"`
						Description *string         `json:"description"`
						Default     json.RawMessage `json:"default"`
						Required    bool            `json:"required"`
						Sensitive   bool            `json:"sensitive"`
					} `json:"variables"`
				} `json:"template"`
			}
			if err := a.do(cmd.Context(), c, `query($n: String!, $v: String!) { template(name: $n, version: $v) { `+catalogFields+`
  digest descriptor variables { name type description default required sensitive } } }`, map[string]any{"n": name, "v": version}, &res); err != nil {
				return err
			}
			t := res.Template
			if t == nil {
				return &NotFoundError{Kind: "template version", Ref: name + "@" + version, Hint: "cairn templates --name " + name + " --all lists its versions"}
			}
			if a.structured() {
				return a.writeData(cmd.OutOrStdout(), t)
			}
			w := cmd.OutOrStdout()
			if err := writeRows(w, [][]string{{"Template:", t.Name + "@" + t.Version}, {"Vendor:", t.Vendor}, {"Status:", t.Status},
				{"Category:", orDash(ptr.Value(t.Category))}, {"Digest:", t.Digest}, {"Description:", orDash(ptr.Value(t.Description))}}); err != nil {
				return err
			}
			fmt.Fprintln(w, "\nVariables:")
			rows := make([][]string, len(t.Variables))
			for i, v := range t.Variables {
				def := "-"
				if len(v.Default) > 0 && string(v.Default) != "null" {
					def = string(v.Default)
				}
				if v.Sensitive {
					def = "(sensitive)"
				}
				need := "optional"
				if v.Required {
					need = "required"
				}
				rows[i] = []string{"  " + v.Name, strings.ToLower(v.Type), need, def, ptr.Value(v.Description)}
			}
			return writeTable(w, []string{"  NAME", "TYPE", "", "DEFAULT", "DESCRIPTION"}, rows)
		},
	}
}

// firstLineOf is the first line of s, at most n runes.
func firstLineOf(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return orDash(s)
}

func newTemplatesPublishCommand(a *app) *cobra.Command {
	var (
		file      string
		noPublish bool
	)
	cmd := &cobra.Command{
		Use:   "publish -f FILE",
		Short: "Register a descriptor and publish it",
		Long: `Register a service descriptor (JSON or YAML) under the name and version its
metadata gives, then publish it so tenants can deploy it. The server checks it
against the descriptor schema and its plugins and reports every problem with
its path. A published version is frozen: publish changes under a new version.
Publishing the same descriptor again changes nothing.

    cairn templates publish -f examples/static-site/service.yaml
    cairn templates publish -f - < service.json`,
		Args: argsNone,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return &usageError{errors.New("give the descriptor with -f FILE (- for standard input)")}
			}
			doc, err := readInput(a, file)
			if err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			var reg struct {
				RegisterTemplate templatePayload `json:"registerTemplate"`
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), a.timeout)
			defer cancel()
			if err := c.Do(ctx, registerTemplateMutation, map[string]any{"input": map[string]any{"descriptor": string(doc)}}, &reg); err != nil {
				return fmt.Errorf("register %s: %w", file, err)
			}
			t := reg.RegisterTemplate
			if !noPublish && t.Template.Status == "VALIDATED" {
				var pub struct {
					PublishTemplate templatePayload `json:"publishTemplate"`
				}
				in := map[string]any{"name": t.Template.Name, "version": t.Template.Version}
				if err := c.Do(ctx, publishTemplateMutation, map[string]any{"input": in}, &pub); err != nil {
					return fmt.Errorf("publish %s: %w", t.Template.ID, err)
				}
				t = pub.PublishTemplate
			}
			if a.structured() {
				return a.writeData(cmd.OutOrStdout(), t)
			}
			return writeTable(cmd.OutOrStdout(), []string{"TEMPLATE", "VENDOR", "STATUS", "DIGEST"},
				[][]string{{t.Template.ID, t.Template.Vendor, t.Template.Status, t.Template.Digest}})
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the descriptor, JSON or YAML (- for standard input)")
	cmd.Flags().BoolVar(&noPublish, "no-publish", false, "only register it: it stays replaceable and is not offered to tenants")
	return cmd
}

// readInput reads a file, or standard input for "-".
func readInput(a *app, file string) ([]byte, error) {
	if file == "-" {
		return io.ReadAll(a.stdin)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return b, nil
}
