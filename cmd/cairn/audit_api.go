package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"cairn/auditapi"
	"cairn/eventstore"
	"cairn/graph/client"
	"cairn/projections/audit"
)

// exportResumes is how often a broken export download is resumed.
const exportResumes = 5

// exportViaAPI downloads an export from the server. A download that breaks
// is resumed after the last whole event line, up to the end the server
// fixed in its first answer; the file gets one trailer over every line, as
// an export from the database would.
func exportViaAPI(ctx context.Context, c *client.Client, o audit.ExportOptions, w io.Writer, progress io.Writer) (audit.ExportSummary, error) {
	var fromText, toText string
	q := url.Values{}
	if !o.From.IsZero() {
		fromText = o.From.String()
		q.Set("from", fromText)
	}
	if !o.To.IsZero() {
		toText = o.To.String()
		q.Set("to", toText)
	}
	if o.StreamID != "" {
		q.Set("stream", o.StreamID)
	}
	cp := audit.NewCopier(w, fromText, toText, o.StreamID)
	for attempt := 0; ; attempt++ {
		err := func() error {
			resp, err := c.Open(ctx, http.MethodGet, "/audit/export?"+q.Encode(), nil, "")
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if through := resp.Header.Get(auditapi.ThroughHeader); through != "" {
				q.Set("to", through) // a resumed download ends where this one would
			}
			return cp.Copy(resp.Body)
		}()
		if err == nil {
			return cp.Close()
		}
		var he *client.HTTPError
		if errors.As(err, &he) || ctx.Err() != nil || attempt == exportResumes {
			return audit.ExportSummary{}, err
		}
		if after := cp.After(); after != "" {
			q.Set("from", after)
		}
		fmt.Fprintf(progress, "the download broke (%v); resuming after %s\n", err, orDash(cp.After()))
		select {
		case <-ctx.Done():
			return audit.ExportSummary{}, ctx.Err()
		case <-time.After(time.Duration(attempt+1) * time.Second):
		}
	}
}

// verifyLog verifies the log's chains, in the database or through the
// server, and hands the report to show.
func (a *app) verifyLog(ctx context.Context, show func(eventstore.VerifyReport) error) error {
	if a.viaDatabase() {
		return a.withLog(ctx, func(store *eventstore.Store, _ *pgxpool.Pool) error {
			rep, err := store.Verify(ctx, "")
			if err != nil {
				return err
			}
			return show(rep)
		})
	}
	c, err := a.auditClient()
	if err != nil {
		return err
	}
	resp, err := c.Open(ctx, http.MethodGet, "/audit/verify", nil, "")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var rep eventstore.VerifyReport
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		return fmt.Errorf("read the server's verification: %w", err)
	}
	return show(rep)
}

// verifyAgainst compares a verified export with the log, in the database
// or through the server.
func (a *app) verifyAgainst(ctx context.Context, rep audit.FileReport) ([]audit.Problem, error) {
	if a.viaDatabase() {
		var against []audit.Problem
		err := a.withLog(ctx, func(store *eventstore.Store, _ *pgxpool.Pool) error {
			var err error
			against, err = audit.VerifyAgainst(ctx, store, rep)
			return err
		})
		return against, err
	}
	c, err := a.auditClient()
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(rep)
	if err != nil {
		return nil, err
	}
	resp, err := c.Open(ctx, http.MethodPost, "/audit/verify-against", bytes.NewReader(body), "application/json")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var problems []audit.Problem
	if err := json.NewDecoder(resp.Body).Decode(&problems); err != nil {
		return nil, fmt.Errorf("read the server's comparison: %w", err)
	}
	return problems, nil
}
