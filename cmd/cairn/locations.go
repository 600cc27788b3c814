package main

import (
	"encoding/json"
	"time"

	"github.com/spf13/cobra"

	"cairn/internal/ptr"
)

type locationRow struct {
	ID          string     `json:"id"`
	Name        string     `json:"name"`
	Description *string    `json:"description"`
	Status      string     `json:"status"`
	CreatedAt   *time.Time `json:"createdAt"`
}

const locationFields = `id name description status createdAt`

func newLocationsCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "locations",
		Short: "List locations; create, rename and retire them",
		Long: `List the locations nodes are placed in (a data centre, a rack row, a city).
Place a node in one with cairn nodes set-location.

    cairn locations
    cairn locations create "Paris 1" --id par-1 --description "first floor"
    cairn locations retire par-1`,
		Args: argsNone,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			rows, err := fetchList[locationRow](cmd.Context(), a, c, `query ($first: Int, $after: String) {
  locations(first: $first, after: $after) { edges { node { `+locationFields+` } } pageInfo { hasNextPage endCursor } } }`,
				"locations", nil, 0)
			if err != nil {
				return err
			}
			return a.writeLocations(cmd, rows)
		},
	}
	cmd.AddCommand(newLocationCreateCommand(a), newLocationUpdateCommand(a), newLocationRetireCommand(a))
	return cmd
}

func (a *app) writeLocations(cmd *cobra.Command, rows []locationRow) error {
	if a.structured() {
		return a.writeData(cmd.OutOrStdout(), nonNil(rows))
	}
	ids := make([]string, len(rows))
	table := make([][]string, len(rows))
	for i, l := range rows {
		ids[i] = l.ID
		table[i] = []string{l.Name, l.Status, orDash(ptr.Value(l.Description)), when(l.CreatedAt)}
	}
	return a.writeNamed(cmd.OutOrStdout(), []string{"NAME", "STATUS", "DESCRIPTION", "CREATED"}, ids, table)
}

func newLocationCreateCommand(a *app) *cobra.Command {
	var id, description string
	cmd := &cobra.Command{
		Use:     "create NAME [--id ID] [--description TEXT]",
		Example: `  cairn locations create "Paris 1" --id par-1 --description "first floor"`,
		Short:   "Create a location",
		Args:    argsOne("location name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			in := withOptional(withOptional(map[string]any{"name": args[0]}, "id", id), "description", description)
			var p struct{ Location locationRow }
			if err := a.mutate(cmd.Context(), c, "createLocation", "CreateLocationInput", "location { "+locationFields+" }", in, &p); err != nil {
				return err
			}
			return a.writeLocations(cmd, []locationRow{p.Location})
		},
	}
	cmd.Flags().StringVar(&id, "id", "", "the location's id, e.g. par-1 (default: generated)")
	cmd.Flags().StringVar(&description, "description", "", "a line about it")
	return cmd
}

func newLocationUpdateCommand(a *app) *cobra.Command {
	var name, description string
	cmd := &cobra.Command{
		Use:     "update LOCATION [--name NAME] [--description TEXT]",
		Example: `  cairn locations update par-1 --name "Paris One"`,
		Short:   "Rename a location or change its description",
		Args:    argsOne("location (id or name)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			l, err := resolveNamed(cmd.Context(), a, c, "location", args[0])
			if err != nil {
				return err
			}
			// The update sets both: what is not given stays as it is.
			var now struct{ Location locationRow }
			if err := a.do(cmd.Context(), c, `query($id: ID!) { location(id: $id) { `+locationFields+` } }`, map[string]any{"id": l.ID}, &now); err != nil {
				return err
			}
			if !cmd.Flags().Changed("name") {
				name = now.Location.Name
			}
			if !cmd.Flags().Changed("description") {
				description = ptr.Value(now.Location.Description)
			}
			in := map[string]any{"locationId": l.ID, "name": name, "description": description}
			var p struct{ Location locationRow }
			if err := a.mutate(cmd.Context(), c, "updateLocation", "UpdateLocationInput", "location { "+locationFields+" }", in, &p); err != nil {
				return err
			}
			return a.writeLocations(cmd, []locationRow{p.Location})
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "its new name")
	cmd.Flags().StringVar(&description, "description", "", "its new description")
	return cmd
}

func newLocationRetireCommand(a *app) *cobra.Command {
	return namedChange{kind: "location", verb: "retire", short: "Retire a location: nothing new is placed there",
		mutation: "retireLocation", inputType: "RetireLocationInput", idField: "locationId", selection: "location { " + locationFields + " }",
		show: func(cmd *cobra.Command, payload json.RawMessage) error {
			var p struct{ Location locationRow }
			if err := json.Unmarshal(payload, &p); err != nil {
				return err
			}
			return a.writeLocations(cmd, []locationRow{p.Location})
		}}.command(a)
}
