package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
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

// newTemplatesCommand groups the vendor's catalog commands.
func newTemplatesCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "templates",
		Short: "Publish service descriptors to the catalog",
		Args:  argsNone,
	}
	cmd.AddCommand(newTemplatesPublishCommand(a))
	return cmd
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
