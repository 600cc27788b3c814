package main

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
)

// The commands that change one node. Each takes the node by id or hostname
// and prints the node as it is after the change.

// nodeManageCommands are the subcommands of cairn nodes that change a node.
func nodeManageCommands(a *app) []*cobra.Command {
	return []*cobra.Command{
		newNodeLabelCommand(a), newNodeSetLocationCommand(a),
		newNodeStateCommand(a, "drain", "drainNode", "DrainNodeInput",
			"Drain a node: nothing new is placed or run there; what runs finishes", true),
		newNodeStateCommand(a, "undrain", "undrainNode", "UndrainNodeInput",
			"Undrain a node: it takes work again", false),
		newNodeStateCommand(a, "decommission", "decommissionNode", "DecommissionNodeInput",
			"Decommission a node for good: its credential stops working and its work is placed elsewhere", true),
	}
}

// changeNode runs a node mutation and prints the node after it.
func changeNode(cmd *cobra.Command, a *app, mutation, inputType string, in map[string]any) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	var p struct{ Node nodeRow }
	if err := a.mutate(cmd.Context(), c, mutation, inputType, "node { "+nodeRowFields+" }", in, &p); err != nil {
		return err
	}
	return a.writeNodes(cmd, []nodeRow{p.Node})
}

func newNodeStateCommand(a *app, verb, mutation, inputType, short string, reasoned bool) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   verb + " NODE",
		Short: short,
		Long:  short + ".\n\n    cairn nodes " + verb + " web-1",
		Args:  argsOne("node (id or hostname)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			n, err := resolveNode(cmd.Context(), a, c, args[0])
			if err != nil {
				return err
			}
			in := map[string]any{"nodeId": n.ID}
			if reasoned {
				withOptional(in, "reason", reason)
			}
			return changeNode(cmd, a, mutation, inputType, in)
		},
	}
	if reasoned {
		cmd.Flags().StringVar(&reason, "reason", "", "why, shown with the node and in the audit trail")
	}
	return cmd
}

func newNodeLabelCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "label NODE KEY=VALUE... [KEY-]...",
		Short: "Set or remove a node's labels",
		Long: `Set labels on a node (KEY=VALUE) or remove them (KEY-); the others stay.
Labels are what placement rules and cairn run --selector pick nodes by.

    cairn nodes label web-1 role=web zone=a
    cairn nodes label web-1 zone-`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return &usageError{errors.New("give the node (id or hostname) and at least one KEY=VALUE or KEY-")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			n, err := resolveNode(cmd.Context(), a, c, args[0])
			if err != nil {
				return err
			}
			labels := map[string]string{}
			for _, l := range n.Labels {
				labels[l.Key] = l.Value
			}
			for _, t := range args[1:] {
				if k, ok := strings.CutSuffix(t, "-"); ok && !strings.Contains(t, "=") {
					delete(labels, k)
					continue
				}
				k, v, ok := strings.Cut(t, "=")
				if !ok || k == "" {
					return &usageError{fmt.Errorf("label %q: write KEY=VALUE to set it or KEY- to remove it", t)}
				}
				labels[k] = v
			}
			keys := make([]string, 0, len(labels))
			for k := range labels {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			in := make([]map[string]string, len(keys))
			for i, k := range keys {
				in[i] = map[string]string{"key": k, "value": labels[k]}
			}
			return changeNode(cmd, a, "setNodeLabels", "SetNodeLabelsInput", map[string]any{"nodeId": n.ID, "labels": in})
		},
	}
}

func newNodeSetLocationCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "set-location NODE LOCATION|none",
		Short: "Place a node in a location, or in none",
		Long: `Place a node in a location (id or name), or take it out of any with none.

    cairn nodes set-location web-1 "Paris 1"`,
		Args: argsExactly("a node (id or hostname) and a location (id, name or none)", 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			n, err := resolveNode(cmd.Context(), a, c, args[0])
			if err != nil {
				return err
			}
			in := map[string]any{"nodeId": n.ID, "locationId": nil}
			if args[1] != "none" {
				l, err := resolveNamed(cmd.Context(), a, c, "location", args[1])
				if err != nil {
					return err
				}
				in["locationId"] = l.ID
			}
			return changeNode(cmd, a, "setNodeLocation", "SetNodeLocationInput", in)
		},
	}
}
