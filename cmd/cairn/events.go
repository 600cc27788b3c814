package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"cairn/graph/client"
	"cairn/internal/ptr"
)

type eventRow struct {
	Cursor     string          `json:"cursor"`
	Position   int64           `json:"position"`
	StreamID   string          `json:"streamId"`
	StreamType string          `json:"streamType"`
	Version    int             `json:"version"`
	Type       string          `json:"type"`
	Time       *time.Time      `json:"time"`
	Payload    json.RawMessage `json:"payload"`
	Metadata   struct {
		CommandID     *string `json:"commandId"`
		CorrelationID *string `json:"correlationId"`
		Actor         *string `json:"actor"`
		ActorName     *string `json:"actorName"`
		TenantID      *string `json:"tenantId"`
	} `json:"metadata"`
}

const eventFields = `cursor position streamId streamType version type time payload
  metadata { commandId correlationId actor actorName tenantId }`

const eventsQuery = `query ($first: Int, $after: Cursor, $filter: EventFilter) {
  events(first: $first, after: $after, filter: $filter) {
    edges { node { ` + eventFields + ` } }
    pageInfo { hasNextPage endCursor }
  }
}`

const eventsSubscription = `subscription ($after: Cursor, $filter: EventFilter) {
  events(after: $after, filter: $filter) { ` + eventFields + ` }
}`

const headQuery = `query { head }`

var eventHeader = []string{"CURSOR", "TIME", "STREAM", "VERSION", "TYPE", "ACTOR"}

func (e eventRow) cells() []string {
	actor := ptr.Value(e.Metadata.ActorName)
	if actor == "" {
		actor = ptr.Value(e.Metadata.Actor)
	}
	return []string{e.Cursor, when(e.Time), e.StreamID, fmt.Sprint(e.Version), e.Type, orDash(actor)}
}

func newEventsCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "events",
		Example: `  cairn events tail -n 20 --follow`,
		Short:   "Read the event log",
		Args:    argsNone,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return &usageError{errors.New("choose a subcommand: cairn events tail")}
		},
	}
	cmd.AddCommand(newEventsTailCommand(a))
	return cmd
}

type tailOptions struct {
	follow      bool
	after       string
	lines       int
	streamTypes []string
	types       []string
	streamIDs   []string
}

func (o tailOptions) filter() map[string]any {
	f := map[string]any{}
	if len(o.streamTypes) > 0 {
		f["streamTypes"] = o.streamTypes
	}
	if len(o.types) > 0 {
		f["types"] = o.types
	}
	if len(o.streamIDs) > 0 {
		f["streamIds"] = o.streamIDs
	}
	return f
}

func newEventsTailCommand(a *app) *cobra.Command {
	var o tailOptions
	cmd := &cobra.Command{
		Use:   "tail",
		Short: "Print the newest events, or every event after a cursor, and optionally follow new ones",
		Long: `Print the newest events (--lines), or every event after --after CURSOR, oldest
first. With --follow, keep printing new events as they are appended, over a
WebSocket subscription; when the connection drops, it reconnects and resumes
after the last event printed, so no event is missed or printed twice.

Each event's cursor is in the first column (and in -o json, one JSON object
per line when following): pass it to --after to carry on later.

    cairn events tail --stream-type node --follow`,
		Args: argsNone,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.lines < 0 {
				return &usageError{fmt.Errorf("--lines must not be negative, got %d", o.lines)}
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			return tail(cmd.Context(), a, c, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().BoolVarP(&o.follow, "follow", "f", false, "keep printing events as they are appended")
	cmd.Flags().StringVar(&o.after, "after", "", "print every event after this cursor (\"0\": from the start of the log) instead of the newest ones")
	cmd.Flags().IntVarP(&o.lines, "lines", "n", 20, "without --after, how many of the newest events to print first")
	cmd.Flags().StringSliceVar(&o.streamTypes, "stream-type", nil, "only events of these stream types (node, job, service, tenant, ...)")
	cmd.Flags().StringSliceVar(&o.types, "type", nil, "only events of these types (node.enrolled, job.finished, ...)")
	cmd.Flags().StringSliceVar(&o.streamIDs, "stream", nil, "only events of these streams (node-<id>, ...)")
	return cmd
}

// eventPrinter prints events as table rows (flushed one by one when
// following) or as JSON.
type eventPrinter struct {
	out     io.Writer
	json    bool
	stream  bool // one JSON object per line, rows flushed as they come
	tw      *tabwriter.Writer
	header  bool
	collect []eventRow
}

func newEventPrinter(out io.Writer, asJSON, stream bool) *eventPrinter {
	return &eventPrinter{out: out, json: asJSON, stream: stream, tw: tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)}
}

func (p *eventPrinter) print(e eventRow) error {
	switch {
	case p.json && p.stream:
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(p.out, "%s\n", b)
		return err
	case p.json:
		p.collect = append(p.collect, e)
		return nil
	}
	if !p.header {
		p.header = true
		fmt.Fprintln(p.tw, strings.Join(eventHeader, "\t"))
	}
	fmt.Fprintln(p.tw, strings.Join(e.cells(), "\t"))
	if p.stream {
		return p.tw.Flush()
	}
	return nil
}

func (p *eventPrinter) finish() error {
	if p.json && !p.stream {
		return writeJSON(p.out, nonNil(p.collect))
	}
	if !p.json && !p.header && !p.stream {
		fmt.Fprintln(p.tw, strings.Join(eventHeader, "\t"))
	}
	return p.tw.Flush()
}

func tail(ctx context.Context, a *app, c *client.Client, o tailOptions, out, errOut io.Writer) error {
	p := newEventPrinter(out, a.output == outputJSON, o.follow)
	var backlog []eventRow
	var err error
	if o.after != "" {
		backlog, err = fetchEventsAfter(ctx, a, c, o.after, o.filter(), 0)
	} else if o.lines > 0 {
		backlog, err = newestEvents(ctx, a, c, o.filter(), o.lines)
	}
	if err != nil {
		return err
	}
	for _, e := range backlog {
		if err := p.print(e); err != nil {
			return err
		}
	}
	if !o.follow {
		return p.finish()
	}
	if err := p.finish(); err != nil {
		return err
	}
	after := o.after
	if len(backlog) > 0 {
		after = backlog[len(backlog)-1].Cursor
	}
	if after == "" {
		// Follow from now: the newest event readers can see.
		var data struct {
			Head string `json:"head"`
		}
		qctx, cancel := context.WithTimeout(ctx, a.timeout)
		err := c.Do(qctx, headQuery, nil, &data)
		cancel()
		if err != nil {
			return err
		}
		after = data.Head
	}
	return follow(ctx, c, o.filter(), after, p, errOut)
}

// fetchEventsAfter reads the events after a cursor, oldest first (limit 0:
// every one).
func fetchEventsAfter(ctx context.Context, a *app, c *client.Client, after string, filter map[string]any, limit int) ([]eventRow, error) {
	var rows []eventRow
	for {
		first := maxPage
		if limit > 0 {
			first = min(first, limit-len(rows))
		}
		var data struct {
			Events struct {
				Edges []struct {
					Node eventRow `json:"node"`
				} `json:"edges"`
				PageInfo pageInfo `json:"pageInfo"`
			} `json:"events"`
		}
		qctx, cancel := context.WithTimeout(ctx, a.timeout)
		err := c.Do(qctx, eventsQuery, map[string]any{"first": first, "after": after, "filter": filter}, &data)
		cancel()
		if err != nil {
			return nil, err
		}
		for _, e := range data.Events.Edges {
			rows = append(rows, e.Node)
		}
		pi := data.Events.PageInfo
		if !pi.HasNextPage || pi.EndCursor == nil || len(data.Events.Edges) == 0 || (limit > 0 && len(rows) >= limit) {
			return rows, nil
		}
		after = *pi.EndCursor
	}
}

// newestEvents returns the last n matching events, oldest first. The log
// is read forwards only, so it pages through every matching event keeping
// the last n; narrow it with a filter on a long log.
func newestEvents(ctx context.Context, a *app, c *client.Client, filter map[string]any, n int) ([]eventRow, error) {
	ring := make([]eventRow, 0, n)
	after := "0"
	for {
		page, err := fetchEventsAfter(ctx, a, c, after, filter, maxPage)
		if err != nil {
			return nil, err
		}
		for _, e := range page {
			if len(ring) == n {
				copy(ring, ring[1:])
				ring = ring[:n-1]
			}
			ring = append(ring, e)
		}
		if len(page) < maxPage {
			return ring, nil
		}
		after = page[len(page)-1].Cursor
	}
}

// fatalCodes are subscription errors that retrying cannot cure.
var fatalCodes = map[string]bool{"UNAUTHENTICATED": true, "FORBIDDEN": true, "INVALID_INPUT": true, "NOT_FOUND": true}

// follow prints the subscription's events after the cursor until ctx ends,
// reconnecting after the last event printed whenever the stream breaks.
func follow(ctx context.Context, c *client.Client, filter map[string]any, after string, p *eventPrinter, errOut io.Writer) error {
	backoff := 250 * time.Millisecond
	for {
		err := followOnce(ctx, c, filter, &after, p, &backoff)
		if ctx.Err() != nil {
			return nil // interrupted: a normal way to stop following
		}
		var oe *outputError
		if errors.As(err, &oe) {
			return err
		}
		var errs client.Errors
		if errors.As(err, &errs) && fatalCodes[errs.Code()] {
			return err
		}
		var ce *client.CloseError
		if errors.As(err, &ce) && ce.Code == 4401 {
			return fmt.Errorf("the server ended the subscription: %s (run `cairn login` with a valid token)", ce.Reason)
		}
		fmt.Fprintf(errOut, "cairn: event stream interrupted (%v); resuming after %s in %s\n", err, after, backoff)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

func followOnce(ctx context.Context, c *client.Client, filter map[string]any, after *string, p *eventPrinter, backoff *time.Duration) error {
	sub, err := c.Subscribe(ctx, client.TransportWS, client.Request{
		Query:     eventsSubscription,
		Variables: map[string]any{"after": *after, "filter": filter},
	})
	if err != nil {
		return err
	}
	defer sub.Close()
	for {
		resp, err := sub.Next(ctx)
		if err != nil {
			return err
		}
		if len(resp.Errors) > 0 {
			return resp.Errors
		}
		var data struct {
			Events eventRow `json:"events"`
		}
		if err := json.Unmarshal(resp.Data, &data); err != nil {
			return fmt.Errorf("malformed event from the server: %w", err)
		}
		if err := p.print(data.Events); err != nil {
			return &outputError{err}
		}
		*after = data.Events.Cursor
		*backoff = 250 * time.Millisecond
	}
}

// outputError is a failure to write an event out: reconnecting cannot cure it.
type outputError struct{ err error }

func (e *outputError) Error() string { return "write the event: " + e.err.Error() }
func (e *outputError) Unwrap() error { return e.err }
