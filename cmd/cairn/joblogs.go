package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"cairn/graph/client"
	"cairn/internal/ptr"
)

// withSubcommands adds subcommands to a command, so the root constructor
// can attach them where it builds the parent.
func withSubcommands(parent *cobra.Command, children ...*cobra.Command) *cobra.Command {
	parent.AddCommand(children...)
	return parent
}

// logChunk is one piece of a job's output.
type logChunk struct {
	JobID  string    `json:"jobId"`
	Seq    int       `json:"seq"`
	Stream string    `json:"stream"`
	Data   string    `json:"data"`
	Time   time.Time `json:"time"`
}

const jobLogPageQuery = `query ($id: ID!, $after: String) {
  job(id: $id) { id status target { mode } children(first: 500) { edges { node { id target { nodeId node { hostname } } } } }
    log(first: 500, after: $after) { edges { node { jobId seq stream data time } } pageInfo { hasNextPage endCursor } } } }`

const jobLogSubscription = `subscription ($id: ID!, $after: Int) { jobLog(jobId: $id, afterSeq: $after) { jobId seq stream data time } }`

// logWriter writes job output as the job wrote it: stdout chunks to
// stdout, stderr and the agent's own lines to stderr; a fan-out's children
// are told apart by a prefix naming their node. With JSON output each chunk
// is one JSON object per line.
type logWriter struct {
	mu     sync.Mutex
	stdout io.Writer
	stderr io.Writer
	json   bool
	// partial holds, per job and stream, an unterminated line waiting for
	// its end when output is prefixed.
	partial map[string]string
}

func newLogWriter(stdout, stderr io.Writer, asJSON bool) *logWriter {
	return &logWriter{stdout: stdout, stderr: stderr, json: asJSON, partial: map[string]string{}}
}

func (w *logWriter) write(prefix string, c logChunk) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.json {
		b, err := json.Marshal(c)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w.stdout, "%s\n", b)
		return err
	}
	out := w.stdout
	data := c.Data
	switch c.Stream {
	case "STDERR":
		out = w.stderr
	case "SYSTEM":
		out = w.stderr
		data = prefixLines("[cairn] ", data)
	}
	if prefix == "" {
		_, err := io.WriteString(out, data)
		return err
	}
	// Whole lines only, each with its prefix, so the children's output
	// does not interleave within a line.
	key := c.JobID + "/" + c.Stream
	data = w.partial[key] + data
	i := strings.LastIndexByte(data, '\n')
	w.partial[key] = data[i+1:]
	if i < 0 {
		return nil
	}
	_, err := io.WriteString(out, prefixLines(prefix, data[:i+1]))
	return err
}

// flush writes what is left of unterminated lines.
func (w *logWriter) flush(prefix, jobID string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, stream := range []string{"STDOUT", "STDERR", "SYSTEM"} {
		key := jobID + "/" + stream
		if rest := w.partial[key]; rest != "" {
			out := w.stdout
			if stream != "STDOUT" {
				out = w.stderr
			}
			if _, err := io.WriteString(out, prefixLines(prefix, rest+"\n")); err != nil {
				return err
			}
		}
		delete(w.partial, key)
	}
	return nil
}

func prefixLines(prefix, s string) string {
	if prefix == "" || s == "" {
		return s
	}
	lines := strings.SplitAfter(s, "\n")
	var b strings.Builder
	for _, l := range lines {
		if l != "" {
			b.WriteString(prefix)
			b.WriteString(l)
		}
	}
	return b.String()
}

type logPage struct {
	Job *struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Target struct {
			Mode *string `json:"mode"`
		} `json:"target"`
		Children struct {
			Edges []struct {
				Node struct {
					ID     string `json:"id"`
					Target struct {
						NodeID *string `json:"nodeId"`
						Node   *struct {
							Hostname string `json:"hostname"`
						} `json:"node"`
					} `json:"target"`
				} `json:"node"`
			} `json:"edges"`
		} `json:"children"`
		Log struct {
			Edges []struct {
				Node logChunk `json:"node"`
			} `json:"edges"`
			PageInfo pageInfo `json:"pageInfo"`
		} `json:"log"`
	} `json:"job"`
}

// printLog prints a job's stored output after seq after and returns the
// last seq printed.
func printLog(ctx context.Context, a *app, c *client.Client, jobID, prefix string, after int, w *logWriter) (int, error) {
	for {
		var page logPage
		qctx, cancel := context.WithTimeout(ctx, a.timeout)
		err := c.Do(qctx, jobLogPageQuery, map[string]any{"id": jobID, "after": strconv.Itoa(after)}, &page)
		cancel()
		if err != nil {
			return after, err
		}
		if page.Job == nil {
			return after, fmt.Errorf("job %q does not exist (or is not yours to read)", jobID)
		}
		for _, e := range page.Job.Log.Edges {
			if err := w.write(prefix, e.Node); err != nil {
				return after, &outputError{err}
			}
			after = e.Node.Seq
		}
		if !page.Job.Log.PageInfo.HasNextPage {
			return after, nil
		}
	}
}

// followLog prints a job's output after seq after as it arrives, until the
// job has ended and all its output was printed. A broken stream is resumed
// after the last chunk printed.
func followLog(ctx context.Context, c *client.Client, jobID, prefix string, after int, w *logWriter, errOut io.Writer) error {
	backoff := 250 * time.Millisecond
	for {
		err := followLogOnce(ctx, c, jobID, prefix, &after, w, &backoff)
		if err == nil || ctx.Err() != nil {
			return w.flush(prefix, jobID)
		}
		var oe *outputError
		if errors.As(err, &oe) {
			return err
		}
		var errs client.Errors
		if errors.As(err, &errs) && fatalCodes[errs.Code()] {
			return err
		}
		fmt.Fprintf(errOut, "cairn: output of job %s interrupted (%v); resuming after chunk %d in %s\n", jobID, err, after, backoff)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

func followLogOnce(ctx context.Context, c *client.Client, jobID, prefix string, after *int, w *logWriter, backoff *time.Duration) error {
	sub, err := c.Subscribe(ctx, client.TransportWS, client.Request{
		Query: jobLogSubscription, Variables: map[string]any{"id": jobID, "after": *after},
	})
	if err != nil {
		return err
	}
	defer sub.Close()
	for {
		resp, err := sub.Next(ctx)
		if errors.Is(err, client.ErrComplete) {
			return nil // the job ended and everything was sent
		}
		if err != nil {
			return err
		}
		if len(resp.Errors) > 0 {
			return resp.Errors
		}
		var data struct {
			JobLog logChunk `json:"jobLog"`
		}
		if err := json.Unmarshal(resp.Data, &data); err != nil {
			return fmt.Errorf("malformed output from the server: %w", err)
		}
		if data.JobLog.Seq <= *after {
			continue
		}
		if err := w.write(prefix, data.JobLog); err != nil {
			return &outputError{err}
		}
		*after = data.JobLog.Seq
		*backoff = 250 * time.Millisecond
	}
}

// jobOutput prints a job's output, following it live with follow; a
// fan-out's output is its children's, each line prefixed with its node.
func jobOutput(ctx context.Context, a *app, c *client.Client, jobID string, follow bool, w *logWriter, errOut io.Writer) error {
	var page logPage
	for {
		qctx, cancel := context.WithTimeout(ctx, a.timeout)
		err := c.Do(qctx, jobLogPageQuery, map[string]any{"id": jobID, "after": "0"}, &page)
		cancel()
		if err != nil {
			return err
		}
		if page.Job == nil {
			return fmt.Errorf("job %q does not exist (or is not yours to read)", jobID)
		}
		// A fan-out's children appear once the control plane spawned them.
		if !follow || ptr.Value(page.Job.Target.Mode) != "ALL" || page.Job.Status != "QUEUED" {
			break
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(100 * time.Millisecond):
		}
	}
	type part struct{ id, prefix string }
	parts := []part{{id: jobID}}
	if kids := page.Job.Children.Edges; len(kids) > 0 {
		parts = parts[:0]
		for _, k := range kids {
			node := ptr.Value(k.Node.Target.NodeID)
			if k.Node.Target.Node != nil {
				node = k.Node.Target.Node.Hostname
			}
			parts = append(parts, part{id: k.Node.ID, prefix: "[" + node + "] "})
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(parts))
	for i, p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last, err := printLog(ctx, a, c, p.id, p.prefix, 0, w)
			if err == nil && follow {
				err = followLog(ctx, c, p.id, p.prefix, last, w, errOut)
			} else if err == nil {
				err = w.flush(p.prefix, p.id)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func newJobLogsCommand(a *app) *cobra.Command {
	var follow bool
	cmd := &cobra.Command{
		Use:   "logs JOB_ID",
		Short: "Print a job's output",
		Long: `Print a job's output: its standard output to standard output, its standard
error and the agent's own notes to standard error. With -f, follow the output
as the job runs, until it ends. A fan-out's output is its children's, each
line prefixed with the node it ran on.

    cairn jobs logs 7f3a -f`,
		Args: argsOne("job id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			w := newLogWriter(cmd.OutOrStdout(), cmd.ErrOrStderr(), a.output == outputJSON)
			err = jobOutput(cmd.Context(), a, c, args[0], follow, w, cmd.ErrOrStderr())
			if cmd.Context().Err() != nil {
				return nil // interrupted: a normal way to stop following
			}
			return err
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "follow the output until the job ends")
	return cmd
}
