package main

import (
	"github.com/spf13/cobra"

	"cairn/domain/ocl"
)

// newOCLCommand groups commands about service descriptors that need no
// server.
func newOCLCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "ocl",
		Example: `  cairn ocl schema > descriptor.schema.json`,
		Short:   "Service descriptors (OCL)",
		Args:    argsNone,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of service descriptors",
		Long: `Print the JSON Schema (draft 2020-12) that service descriptors are checked
against, for editors' completion and checking. docs/ocl.md explains each field.

    cairn ocl schema > ocl.schema.json`,
		Args: argsNone,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := ocl.Schema()
			if len(out) > 0 && out[len(out)-1] != '\n' {
				out = append(out, '\n')
			}
			_, err := cmd.OutOrStdout().Write(out)
			return err
		},
	})
	return cmd
}
