package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set when building a release: -ldflags "-X main.version=v1.2.3".
var version = "dev"

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print cairnd's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionString())
			return err
		},
	}
}

// versionString names the release, the commit when the build recorded one,
// and the Go toolchain and platform.
func versionString() string {
	v, commit := version, ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		var dirty bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value[:min(len(s.Value), 12)]
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if commit != "" && dirty {
			commit += "-dirty"
		}
	}
	if commit != "" {
		commit = "commit " + commit + ", "
	}
	return fmt.Sprintf("cairnd %s (%s%s %s/%s)", v, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
