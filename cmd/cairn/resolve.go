package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"cairn/graph/client"
)

// Every command that takes an object takes its name as well as its id: an
// id is used when an object has it, otherwise the name is looked up, and a
// name that several objects share is refused with how to tell them apart.

// NotFoundError is a name or id that names nothing the caller may see.
type NotFoundError struct {
	Kind, Ref string
	Hint      string
}

func (e *NotFoundError) Error() string {
	msg := fmt.Sprintf("no %s has the id or name %q", e.Kind, e.Ref)
	if e.Hint != "" {
		msg += ": " + e.Hint
	}
	return msg
}

// AmbiguousError is a name several objects share.
type AmbiguousError struct {
	Kind, Ref string
	Matches   []string // how each match is told apart
	Hint      string
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("%d %ss are named %q (%s): %s", len(e.Matches), e.Kind, e.Ref, strings.Join(e.Matches, ", "), e.Hint)
}

// do runs one GraphQL operation within the request timeout.
func (a *app) do(ctx context.Context, c *client.Client, query string, vars map[string]any, out any) error {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	return c.Do(ctx, query, vars, out)
}

// nodeRef is a node as the commands that act on one need it.
type nodeRef struct {
	ID             string  `json:"id"`
	Hostname       string  `json:"hostname"`
	Status         string  `json:"status"`
	Cordoned       bool    `json:"cordoned"`
	DisconnectedAt *string `json:"disconnectedAt"`
	Labels         []label `json:"labels"`
}

const nodeRefFields = `id hostname status cordoned disconnectedAt labels { key value }`

// resolveNode finds a node by id or hostname.
func resolveNode(ctx context.Context, a *app, c *client.Client, ref string) (nodeRef, error) {
	var byID struct{ ServerNode *nodeRef }
	if err := a.do(ctx, c, `query($id: ID!) { serverNode(id: $id) { `+nodeRefFields+` } }`, map[string]any{"id": ref}, &byID); err != nil {
		return nodeRef{}, err
	}
	if byID.ServerNode != nil {
		return *byID.ServerNode, nil
	}
	var byName struct {
		Nodes struct{ Edges []struct{ Node nodeRef } }
	}
	if err := a.do(ctx, c, `query($h: String) { nodes(first: 50, filter: {hostname: $h}) { edges { node { `+nodeRefFields+` } } } }`,
		map[string]any{"h": ref}, &byName); err != nil {
		return nodeRef{}, err
	}
	var matches []nodeRef
	for _, e := range byName.Nodes.Edges {
		if strings.EqualFold(e.Node.Hostname, ref) {
			matches = append(matches, e.Node)
		}
	}
	switch len(matches) {
	case 0:
		return nodeRef{}, &NotFoundError{Kind: "node", Ref: ref, Hint: "cairn nodes lists them"}
	case 1:
		return matches[0], nil
	}
	ids := make([]string, len(matches))
	for i, m := range matches {
		ids[i] = m.ID + " " + strings.ToLower(m.Status)
	}
	return nodeRef{}, &AmbiguousError{Kind: "node", Ref: ref, Matches: ids, Hint: "give the id"}
}

// serviceRef is a service as name resolution sees it.
type serviceRef struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	TenantID string `json:"tenantId"`
}

// resolveService finds a service by id, by name, or by TENANT/NAME (a
// service's name is unique within its tenant).
func resolveService(ctx context.Context, a *app, c *client.Client, ref string) (serviceRef, error) {
	var byID struct{ Service *serviceRef }
	if err := a.do(ctx, c, `query($id: ID!) { service(id: $id) { id name tenantId } }`, map[string]any{"id": ref}, &byID); err != nil {
		return serviceRef{}, err
	}
	if byID.Service != nil {
		return *byID.Service, nil
	}
	filter := map[string]any{"name": ref}
	tenant, name, scoped := strings.Cut(ref, "/")
	if scoped {
		filter = map[string]any{"name": name, "tenantId": tenant}
	} else {
		name = ref
	}
	var byName struct {
		Services struct{ Edges []struct{ Node serviceRef } }
	}
	if err := a.do(ctx, c, `query($f: ServiceFilter) { services(first: 50, filter: $f) { edges { node { id name tenantId } } } }`,
		map[string]any{"f": filter}, &byName); err != nil {
		return serviceRef{}, err
	}
	var matches []serviceRef
	for _, e := range byName.Services.Edges {
		if e.Node.Name == name {
			matches = append(matches, e.Node)
		}
	}
	switch len(matches) {
	case 0:
		return serviceRef{}, &NotFoundError{Kind: "service", Ref: ref, Hint: "cairn services lists them"}
	case 1:
		return matches[0], nil
	}
	where := make([]string, len(matches))
	for i, m := range matches {
		where[i] = m.TenantID + "/" + m.Name
	}
	return serviceRef{}, &AmbiguousError{Kind: "service", Ref: ref, Matches: where, Hint: "write it as TENANT/NAME"}
}

// named is a related object as a row shows it: by its name.
type named struct {
	Name string `json:"name"`
}

// nameOr is the related object's name, or id when the caller may not read
// it (the relation is then null).
func nameOr(id string, n *named) string {
	if n != nil && n.Name != "" {
		return n.Name
	}
	return id
}

// namedRef is a tenant, user or location: an id and a name.
type namedRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// namedKinds are the objects found by id, else by listing and matching the
// name exactly: their lists are short (tens to hundreds).
var namedKinds = map[string]struct{ one, list string }{
	"tenant":   {`query($id: ID!) { one: tenant(id: $id) { id name } }`, `query($first: Int, $after: String) { list: tenants(first: $first, after: $after) { edges { node { id name } } pageInfo { hasNextPage endCursor } } }`},
	"user":     {`query($id: ID!) { one: user(id: $id) { id name } }`, `query($first: Int, $after: String) { list: users(first: $first, after: $after) { edges { node { id name } } pageInfo { hasNextPage endCursor } } }`},
	"location": {`query($id: ID!) { one: location(id: $id) { id name } }`, `query($first: Int, $after: String) { list: locations(first: $first, after: $after) { edges { node { id name } } pageInfo { hasNextPage endCursor } } }`},
}

// resolveNamed finds a tenant, user or location by id or exact name.
func resolveNamed(ctx context.Context, a *app, c *client.Client, kind, ref string) (namedRef, error) {
	q, ok := namedKinds[kind]
	if !ok {
		return namedRef{}, fmt.Errorf("cannot look up a %s by name", kind)
	}
	var byID struct{ One *namedRef }
	if err := a.do(ctx, c, q.one, map[string]any{"id": ref}, &byID); err != nil {
		return namedRef{}, err
	}
	if byID.One != nil {
		return *byID.One, nil
	}
	rows, err := fetchList[namedRef](ctx, a, c, q.list, "list", nil, 0)
	if err != nil {
		return namedRef{}, err
	}
	var matches []namedRef
	for _, r := range rows {
		if r.Name == ref {
			matches = append(matches, r)
		}
	}
	switch len(matches) {
	case 0:
		return namedRef{}, &NotFoundError{Kind: kind, Ref: ref, Hint: "cairn " + kind + "s lists them"}
	case 1:
		return matches[0], nil
	}
	ids := make([]string, len(matches))
	for i, m := range matches {
		ids[i] = m.ID
	}
	return namedRef{}, &AmbiguousError{Kind: kind, Ref: ref, Matches: ids, Hint: "give the id"}
}

// namedChange is a command that changes one tenant, user or location found
// by id or name: cairn KINDs VERB NAME [--reason TEXT].
type namedChange struct {
	kind, verb, short   string
	mutation, inputType string
	idField             string // the input's field for the object's id
	reason              string // the --reason flag's help; "" for none
	selection           string // the payload's selection
	show                func(cmd *cobra.Command, payload json.RawMessage) error
}

func (n namedChange) command(a *app) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:     n.verb + " " + strings.ToUpper(n.kind),
		Short:   n.short,
		Example: "  cairn " + n.kind + "s " + n.verb + " NAME",
		Args:    argsOne(n.kind + " (id or name)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			obj, err := resolveNamed(cmd.Context(), a, c, n.kind, args[0])
			if err != nil {
				return err
			}
			in := map[string]any{n.idField: obj.ID}
			if n.reason != "" {
				withOptional(in, "reason", reason)
			}
			var payload json.RawMessage
			if err := a.mutate(cmd.Context(), c, n.mutation, n.inputType, n.selection, in, &payload); err != nil {
				return err
			}
			return n.show(cmd, payload)
		},
	}
	if n.reason != "" {
		cmd.Flags().StringVar(&reason, "reason", "", n.reason)
	}
	return cmd
}
