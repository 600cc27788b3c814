package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"cairn/commands"
	"cairn/commands/access"
	"cairn/domain"
	"cairn/domain/events"
	"cairn/domain/tenant"
	"cairn/eventstore"
	"cairn/internal/database"
	"cairn/migrations"
)

func newTokenCommand(cfg *config) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Manage API tokens directly in the database",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return fmt.Errorf("choose a subcommand: %s create", cmd.CommandPath())
		},
	}
	cmd.AddCommand(newTokenCreateCommand(cfg))
	return cmd
}

func newTokenCreateCommand(cfg *config) *cobra.Command {
	var user string
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Issue an API token for an existing user and print it once",
		Long: `Issue an API token for an existing, active user, acting with the user's role
and tenant, and print it once: only its hash is kept. It works on the database
directly, like ` + "`cairnd migrate`" + `, so it also serves when no admin token is at hand.
--user takes the user's id or, when no user has that id, its exact name.

    cairnd token create --user admin --ttl 24h`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if strings.TrimSpace(user) == "" {
				return fmt.Errorf("which user? give --user NAME|ID (see %s --help)", cmd.CommandPath())
			}
			return createToken(cmd.Context(), cfg, cmd, user, ttl)
		},
	}
	cmd.Flags().StringVar(&user, "user", "", "the user, by id or by exact name")
	cmd.Flags().DurationVar(&ttl, "ttl", 720*time.Hour, "the token's lifetime")
	return cmd
}

// AmbiguousUserError is a name several users share.
type AmbiguousUserError struct {
	Name string
	IDs  []string
}

func (e *AmbiguousUserError) Error() string {
	return fmt.Sprintf("%d users are named %q (ids %s): give --user the id instead", len(e.IDs), e.Name, strings.Join(e.IDs, ", "))
}

// UnknownUserError is a --user that names no user.
type UnknownUserError struct{ User string }

func (e *UnknownUserError) Error() string {
	return fmt.Sprintf("no user has the id or name %q", e.User)
}

func createToken(ctx context.Context, cfg *config, cmd *cobra.Command, user string, ttl time.Duration) (err error) {
	log := cfg.logger(cmd.ErrOrStderr())
	be, err := openBackend(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, be.Close()) }()

	owner, err := database.Open(ctx, be.url, database.Options{MaxConns: 2, AppName: "cairnd token"})
	if err != nil {
		return err
	}
	defer owner.Close()
	st, err := migrations.Check(ctx, owner)
	if err != nil {
		return err
	}
	if !st.UpToDate() {
		return fmt.Errorf("the database schema is at version %d of %d: run `cairnd migrate` first", st.Current, st.Latest)
	}
	serveURL, err := be.serveURL(ctx, owner)
	if err != nil {
		return err
	}
	pool, err := database.Open(ctx, serveURL, database.Options{Role: database.AppRole, MaxConns: 2, AppName: "cairnd token"})
	if err != nil {
		return err
	}
	defer pool.Close()
	store := eventstore.New(pool, events.Registry(), eventstore.Options{Log: log.With().Str("component", "eventstore").Logger()})
	defer store.Close()

	userID, err := resolveUser(ctx, store, user)
	if err != nil {
		return err
	}
	h := access.NewHandlers(store, time.Now, newID, access.Options{})
	tok, err := h.IssueToken(ctx, commands.Meta{Actor: "cairnd", CorrelationID: "cli:" + newID()}, access.IssueToken{UserID: userID, TTL: ttl})
	if err != nil {
		return fmt.Errorf("issue a token for user %q: %w", userID, err)
	}
	return printToken(cmd.OutOrStdout(), userID, tok)
}

func printToken(out io.Writer, userID string, tok access.IssuedToken) error {
	_, err := fmt.Fprintf(out, "%s\n", tok.Token)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "# token %s for user %s, expires %s; shown once, keep it safe\n",
		tok.ID, userID, tok.ExpiresAt.UTC().Format(time.RFC3339))
	return err
}

// resolveUser finds the user by id, or else by exact name among every user
// ever created (a command-line tool may read the log; it is short).
func resolveUser(ctx context.Context, store *eventstore.Store, user string) (string, error) {
	u, _, err := commands.Load[tenant.User](ctx, store, domain.UserStream, user)
	if err != nil {
		return "", err
	}
	if u.Exists() {
		return user, nil
	}
	var ids []string
	after := eventstore.Start
	for {
		evs, err := store.ReadAll(ctx, after, 1000, eventstore.Filter{
			StreamTypes: []string{domain.UserStream},
			EventTypes:  []string{tenant.UserCreated{}.EventType()},
		})
		if err != nil {
			return "", err
		}
		for _, e := range evs {
			var c tenant.UserCreated
			if err := json.Unmarshal(e.Payload, &c); err != nil {
				return "", fmt.Errorf("read user event at %s: %w", e.Cursor(), err)
			}
			if c.Name == user {
				ids = append(ids, c.UserID)
			}
		}
		if len(evs) < 1000 {
			break
		}
		after = evs[len(evs)-1].Cursor()
	}
	sort.Strings(ids)
	switch len(ids) {
	case 0:
		return "", &UnknownUserError{User: user}
	case 1:
		return ids[0], nil
	}
	return "", &AmbiguousUserError{Name: user, IDs: ids}
}
