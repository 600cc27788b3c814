package access_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn/commands"
	"cairn/commands/access"
	"cairn/commands/commandstest"
	"cairn/domain"
	"cairn/domain/jointoken"
	"cairn/domain/node"
	"cairn/eventstore"
	"cairn/internal/bearer"
)

func issueJoin(t *testing.T, f fixture) access.IssuedJoinToken {
	t.Helper()
	jt, err := f.h.IssueJoinToken(context.Background(), commands.Meta{Actor: "user:op"},
		access.IssueJoinToken{LocationID: "loc-1", Labels: map[string]string{"rack": "a"}})
	if err != nil {
		t.Fatal(err)
	}
	return jt
}

func TestRedeemEnrollsOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := seed(t, newFixture(t), "")
	jt := issueJoin(t, f)
	if !jt.ExpiresAt.Equal(t0.Add(15*time.Minute)) || !strings.HasPrefix(jt.Token, "cairnjoin_"+jt.ID+"_") {
		t.Fatalf("join token %+v", jt)
	}
	meta := commands.Meta{CommandID: "agent-join-1"}
	in := access.RedeemJoinToken{Token: jt.Token, Hostname: "web-1", Labels: map[string]string{"rack": "b", "disk": "ssd"}}
	enr, err := f.h.RedeemJoinToken(ctx, meta, in)
	if err != nil {
		t.Fatal(err)
	}
	n, _, err := commands.Load[node.Node](ctx, f.s, domain.NodeStream, enr.ID)
	if err != nil || n.Status != node.StatusEnrolled || n.Hostname != "web-1" || n.LocationID != "loc-1" ||
		n.Labels["rack"] != "a" || n.Labels["disk"] != "ssd" {
		t.Fatalf("node %+v %v: the join token's location and labels (which win) should apply", n, err)
	}
	credID, credSecret, err := bearer.Parse(bearer.APIToken, enr.Credential)
	if err != nil || credID != bearer.NodeCredentialPrefix+enr.ID {
		t.Fatalf("credential %q: %v", enr.Credential, err)
	}
	cred, _, err := commands.Load[jointoken.Credential](ctx, f.s, domain.NodeCredentialStream, enr.ID)
	if err != nil || cred.SecretHash != bearer.Hash(credSecret) || !cred.Usable(t0.Add(1000*time.Hour)) {
		t.Fatalf("credential %+v %v", cred, err)
	}
	// Token, node and credential changed in one transaction, by the token.
	var tx uint64
	for _, stream := range []string{"join_token-" + jt.ID, "node-" + enr.ID, "node_credential-" + enr.ID} {
		evs := commandstest.Stream(t, f.s, stream)
		last := evs[len(evs)-1]
		if tx == 0 {
			tx = last.TxID
		}
		if last.TxID != tx || last.Metadata.Actor != "join_token:"+jt.ID {
			t.Fatalf("%s: tx %d (want %d), actor %q", stream, last.TxID, tx, last.Metadata.Actor)
		}
	}
	// Neither secret reached the log.
	_, joinSecret, _ := bearer.Parse(bearer.JoinToken, jt.Token)
	for _, secret := range []string{joinSecret, credSecret} {
		if c := commandstest.CountContaining(t, f.s, secret); c != 0 {
			t.Fatalf("a clear secret is in %d events", c)
		}
	}
	// The agent's retry is recognised; the credential is not shown again.
	again, err := f.h.RedeemJoinToken(ctx, meta, in)
	if err != nil || !again.Duplicate || again.ID != enr.ID || again.Credential != "" || again.Cursor != enr.Cursor {
		t.Fatalf("retry: %+v %v", again, err)
	}
	// Another redemption is refused: single use.
	_, err = f.h.RedeemJoinToken(ctx, commands.Meta{}, in)
	var used *jointoken.UsedError
	if !errors.As(err, &used) || used.NodeID != enr.ID || !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("reuse: %v", err)
	}
}

func TestRedeemRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := seed(t, newFixture(t), "")
	expired := issueJoin(t, f)
	f.clock.Advance(15 * time.Minute)
	fresh := issueJoin(t, f)
	id, _, _ := bearer.Parse(bearer.JoinToken, fresh.Token)
	wrongSecret, _ := bearer.Mint(bearer.JoinToken, id)
	unknown, _ := bearer.Mint(bearer.JoinToken, "jt-nope")
	revoked := issueJoin(t, f)
	if _, err := f.h.RevokeJoinToken(ctx, commands.Meta{}, access.RevokeJoinToken{TokenID: revoked.ID}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, token, hostname string
		check                 func(error) bool
	}{
		{"expired", expired.Token, "h", func(err error) bool { var e *jointoken.ExpiredError; return errors.As(err, &e) }},
		{"wrong secret", wrongSecret.Clear, "h", func(err error) bool { return errors.Is(err, domain.ErrNotFound) }},
		{"unknown", unknown.Clear, "h", func(err error) bool { return errors.Is(err, domain.ErrNotFound) }},
		{"revoked", revoked.Token, "h", func(err error) bool { return errors.Is(err, domain.ErrConflict) }},
		{"malformed", "cairnjoin_x", "h", func(err error) bool {
			var ve *domain.ValidationError
			return errors.As(err, &ve) && ve.Field == "token"
		}},
		{"an API token", strings.Replace(fresh.Token, "cairnjoin_", "cairn_", 1), "h", func(err error) bool { return errors.Is(err, domain.ErrInvalid) }},
		{"bad host name", fresh.Token, "bad host", func(err error) bool { return errors.Is(err, domain.ErrInvalid) }},
	}
	before := commandstest.CountEvents(t, f.s)
	for _, c := range cases {
		_, err := f.h.RedeemJoinToken(ctx, commands.Meta{}, access.RedeemJoinToken{Token: c.token, Hostname: c.hostname})
		if !c.check(err) {
			t.Errorf("%s: unexpected %v", c.name, err)
		}
	}
	if n := commandstest.CountEvents(t, f.s); n != before {
		t.Fatalf("refused redemptions appended %d events", n-before)
	}
	// The fresh token, refused only for its bad host name, still works.
	if _, err := f.h.RedeemJoinToken(ctx, commands.Meta{}, access.RedeemJoinToken{Token: fresh.Token, Hostname: "ok"}); err != nil {
		t.Fatal(err)
	}
}

// Agents racing with one token: exactly one node is enrolled, the others are
// told the token is used.
func TestConcurrentRedemption(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := seed(t, newFixture(t), "")
	jt := issueJoin(t, f)
	const agents = 6
	var wg sync.WaitGroup
	results := make(chan error, agents)
	for i := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := f.h.RedeemJoinToken(ctx, commands.Meta{CommandID: fmt.Sprintf("agent-%d", i)},
				access.RedeemJoinToken{Token: jt.Token, Hostname: fmt.Sprintf("host-%d", i)})
			results <- err
		}()
	}
	wg.Wait()
	close(results)
	won := 0
	for err := range results {
		var used *jointoken.UsedError
		switch {
		case err == nil:
			won++
		case errors.As(err, &used):
		default:
			t.Errorf("unexpected %v", err)
		}
	}
	enrolled, err := f.s.Count(ctx, eventstore.Filter{EventTypes: []string{"node.enrolled"}})
	if err != nil {
		t.Fatal(err)
	}
	credentials, err := f.s.Count(ctx, eventstore.Filter{EventTypes: []string{"node_credential.issued"}})
	if err != nil || won != 1 || enrolled != 1 || credentials != 1 {
		t.Fatalf("%d agents enrolled, %d nodes and %d credentials recorded (%v)", won, enrolled, credentials, err)
	}
}
