package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/goccy/go-yaml"

	"cairn/graph/client"
)

// The output formats of -o.
const (
	outputTable = "table"
	outputJSON  = "json"
	outputWide  = "wide" // a table with ids beside names
	outputYAML  = "yaml"
)

// structured reports whether the output is data (JSON or YAML), not a table.
func (a *app) structured() bool { return a.output == outputJSON || a.output == outputYAML }

// writeData prints v as JSON or YAML, as -o asks; YAML keeps the API's field
// names, as JSON does.
func (a *app) writeData(w io.Writer, v any) error {
	if a.output != outputYAML {
		return writeJSON(w, v)
	}
	// Through JSON, so that the json tags (the API's names) hold.
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	out, err := yaml.JSONToYAML(b)
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}

// maxPage is the largest page the API serves.
const maxPage = 500

// writeTable prints rows under a header, aligned in columns.
func writeTable(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// orDash shows an absent value as "-".
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// when shows a time compactly, in UTC.
func when(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

type label struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

func labelsText(ls []label) string {
	if len(ls) == 0 {
		return "-"
	}
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = l.Key + "=" + l.Value
	}
	return strings.Join(parts, ",")
}

// parseLabels reads key=value terms.
func parseLabels(terms []string) ([]map[string]string, error) {
	out := make([]map[string]string, 0, len(terms))
	for _, t := range terms {
		k, v, ok := strings.Cut(t, "=")
		if !ok || k == "" {
			return nil, &usageError{fmt.Errorf("label %q: write it as key=value", t)}
		}
		out = append(out, map[string]string{"key": k, "value": v})
	}
	return out, nil
}

// enumValues upper-cases the values of a list flag (status names).
func enumValues(vs []string) []string {
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		for p := range strings.SplitSeq(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, strings.ToUpper(p))
			}
		}
	}
	return out
}

type pageInfo struct {
	HasNextPage bool    `json:"hasNextPage"`
	EndCursor   *string `json:"endCursor"`
}

// fetchList pages through the connection field of query (which declares
// $first: Int and $after: String) until it has limit rows (0: all of them).
func fetchList[T any](ctx context.Context, a *app, c *client.Client, query, field string, vars map[string]any, limit int) ([]T, error) {
	return fetchPages[T](ctx, a, c, query, field, vars, limit, maxPage)
}

// fetchPages is fetchList in pages of at most page rows, for rows whose
// fields cost more than the server lets a page of maxPage cost.
func fetchPages[T any](ctx context.Context, a *app, c *client.Client, query, field string, vars map[string]any, limit, page int) ([]T, error) {
	var rows []T
	var after *string
	for {
		first := page
		if limit > 0 {
			first = min(first, limit-len(rows))
		}
		v := map[string]any{"first": first, "after": after}
		for k, x := range vars {
			v[k] = x
		}
		var data map[string]struct {
			Edges []struct {
				Node T `json:"node"`
			} `json:"edges"`
			PageInfo pageInfo `json:"pageInfo"`
		}
		qctx, cancel := context.WithTimeout(ctx, a.timeout)
		err := c.Do(qctx, query, v, &data)
		cancel()
		if err != nil {
			return nil, err
		}
		conn := data[field]
		for _, e := range conn.Edges {
			rows = append(rows, e.Node)
		}
		if !conn.PageInfo.HasNextPage || conn.PageInfo.EndCursor == nil || len(conn.Edges) == 0 ||
			(limit > 0 && len(rows) >= limit) {
			return rows, nil
		}
		after = conn.PageInfo.EndCursor
	}
}

// writeNamed prints a table of objects people know by name; -o wide puts
// each one's id first.
func (a *app) writeNamed(w io.Writer, header []string, ids []string, rows [][]string) error {
	if a.output != outputWide {
		return writeTable(w, header, rows)
	}
	wide := make([][]string, len(rows))
	for i, r := range rows {
		wide[i] = append([]string{ids[i]}, r...)
	}
	return writeTable(w, append([]string{"ID"}, header...), wide)
}

// mutate runs one mutation whose input is $input of inputType and decodes
// its payload (the selection of field) into out.
func (a *app) mutate(ctx context.Context, c *client.Client, field, inputType, selection string, input map[string]any, out any) error {
	var res map[string]json.RawMessage
	q := fmt.Sprintf("mutation ($input: %s!) { %s(input: $input) { %s } }", inputType, field, selection)
	if err := a.do(ctx, c, q, map[string]any{"input": input}, &res); err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(res[field], out)
}

// withOptional sets input[key] to v when v is not empty.
func withOptional(input map[string]any, key, v string) map[string]any {
	if v != "" {
		input[key] = v
	}
	return input
}
