package graph_test

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"cairn/commands"
	"cairn/commands/access"
	"cairn/dispatch"
	"cairn/dispatch/dispatchtest"
	"cairn/domain/tenant"
	"cairn/graph"
	"cairn/graph/apierr"
	"cairn/graph/client"
	"cairn/graph/graphtest"
	"cairn/graph/transport"
	"cairn/internal/testdb"
)

// Revoking a token ends what it does at once: its next request is refused
// and its open subscription ends, long before the periodic re-check (an
// hour here) would notice.
func TestRevocationEndsSessionsAtOnce(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	db := testdb.New(t)
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	de, err := dispatchtest.Start(db.AppPool(t), dispatch.Options{}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = de.Stop() })
	api, err := graphtest.ServeJobSide(de, graph.Config{Transport: transport.Options{RecheckInterval: time.Hour}}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.Close() })
	fctx, stop := context.WithCancel(context.Background())
	followed := make(chan error, 1)
	go func() { followed <- de.Auth.Follow(fctx, de.Store) }()
	t.Cleanup(func() { stop(); <-followed })
	select {
	case <-de.Auth.Following():
	case err := <-followed:
		t.Fatalf("following the log: %v", err)
	}

	meta := commands.Meta{Actor: "test"}
	u, err := de.Access.CreateUser(ctx, meta, access.CreateUser{Name: "Ada", Role: tenant.RoleAuditor})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := de.Access.IssueToken(ctx, meta, access.IssueToken{UserID: u.ID})
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(api.URL, tok.Token, nil)
	if err := c.Do(ctx, `{ viewer { role } }`, nil, nil); err != nil {
		t.Fatal(err)
	}
	sub, err := c.Subscribe(ctx, client.TransportWS, client.Request{Query: `subscription { events { cursor } }`})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	if _, err := de.Access.RevokeToken(ctx, meta, access.RevokeToken{TokenID: tok.ID, Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	// The subscription ends; events of the revocation itself may come first.
	for {
		resp, err := sub.Next(ctx)
		if err != nil {
			if client.CodeOf(err) != apierr.CodeUnauthenticated && ctx.Err() != nil {
				t.Fatalf("the subscription did not end: %v", err)
			}
			break
		}
		if len(resp.Errors) > 0 {
			if resp.Errors.Code() != apierr.CodeUnauthenticated {
				t.Fatalf("ended with %v, want UNAUTHENTICATED", resp.Errors)
			}
			break
		}
	}
	if err := c.Do(ctx, `{ viewer { role } }`, nil, nil); client.CodeOf(err) != apierr.CodeUnauthenticated {
		t.Fatalf("a request after the revocation: %v", err)
	}
}
