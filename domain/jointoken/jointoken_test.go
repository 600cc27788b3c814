package jointoken_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"cairn/domain"
	"cairn/domain/jointoken"
)

var t0 = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

func at(minutes int) time.Time { return t0.Add(time.Duration(minutes) * time.Minute) }

var (
	hash     = strings.Repeat("ab", 32)
	other    = strings.Repeat("cd", 32)
	issued   = jointoken.Issued{TokenID: "jt-1", SecretHash: hash, LocationID: "loc-1", Labels: map[string]string{"rack": "a"}, ExpiresAt: at(15), At: at(0)}
	redeemed = jointoken.Redeemed{TokenID: "jt-1", NodeID: "node-1", At: at(1)}
	revoked  = jointoken.Revoked{TokenID: "jt-1", Reason: "typo", At: at(2)}
	credIss  = jointoken.CredentialIssued{NodeID: "node-1", SecretHash: hash, At: at(1)}
	credRev  = jointoken.CredentialRevoked{NodeID: "node-1", Reason: "decommissioned", At: at(3)}
)

func foldJoin(es ...domain.Event) jointoken.JoinToken {
	var x jointoken.JoinToken
	for _, e := range es {
		x.Apply(e)
	}
	return x
}

func foldCred(es ...domain.Event) jointoken.Credential {
	var x jointoken.Credential
	for _, e := range es {
		x.Apply(e)
	}
	return x
}

// Every command in every status: allowed ones move to the expected status,
// the others are refused with an error of the expected kind.
func TestJoinTokenMatrix(t *testing.T) {
	t.Parallel()
	history := map[jointoken.Status][]domain.Event{
		jointoken.StatusActive:   {issued},
		jointoken.StatusRedeemed: {issued, redeemed},
		jointoken.StatusRevoked:  {issued, revoked},
	}
	run := map[string]func(jointoken.JoinToken) ([]domain.Event, error){
		jointoken.CmdIssue: func(x jointoken.JoinToken) ([]domain.Event, error) {
			return x.Issue(jointoken.Issue{TokenID: "jt-1", SecretHash: hash, ExpiresAt: at(15), At: at(0)})
		},
		jointoken.CmdRedeem: func(x jointoken.JoinToken) ([]domain.Event, error) {
			return x.Redeem(jointoken.Redeem{TokenID: "jt-1", SecretHash: hash, NodeID: "node-2", At: at(5)})
		},
		jointoken.CmdRevoke: func(x jointoken.JoinToken) ([]domain.Event, error) {
			return x.Revoke(jointoken.Revoke{TokenID: "jt-1", At: at(5)})
		},
	}
	next := map[jointoken.Status]map[string]jointoken.Status{
		jointoken.StatusActive: {jointoken.CmdRedeem: jointoken.StatusRedeemed, jointoken.CmdRevoke: jointoken.StatusRevoked},
	}
	for _, status := range jointoken.Statuses {
		for _, cmd := range jointoken.Commands {
			t.Run(string(status)+"/"+cmd, func(t *testing.T) {
				t.Parallel()
				state := foldJoin(history[status]...)
				es, err := run[cmd](state)
				want, ok := next[status][cmd]
				if ok != slices.Contains(jointoken.AllowedCommands(status), cmd) {
					t.Fatalf("table and test disagree on %s in %s", cmd, status)
				}
				if !ok {
					if !errors.Is(err, domain.ErrConflict) {
						t.Fatalf("want a conflict, got %v %v", es, err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if got := foldJoin(append(slices.Clone(history[status]), es...)...).Status; got != want {
					t.Fatalf("status %s, want %s", got, want)
				}
			})
		}
	}
	for _, cmd := range []string{jointoken.CmdRedeem, jointoken.CmdRevoke} {
		if _, err := run[cmd](jointoken.JoinToken{}); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("%s on a missing token: %v", cmd, err)
		}
	}
}

func TestRedeemRefusals(t *testing.T) {
	t.Parallel()
	active := foldJoin(issued)
	cases := []struct {
		name  string
		state jointoken.JoinToken
		cmd   jointoken.Redeem
		check func(error) bool
	}{
		{"wrong secret looks unknown", active, jointoken.Redeem{TokenID: "jt-1", SecretHash: other, NodeID: "n", At: at(1)},
			func(err error) bool { var nf *domain.NotFoundError; return errors.As(err, &nf) && nf.ID == "jt-1" }},
		{"expired", active, jointoken.Redeem{TokenID: "jt-1", SecretHash: hash, NodeID: "n", At: at(15)},
			func(err error) bool {
				var ee *jointoken.ExpiredError
				return errors.As(err, &ee) && ee.ExpiredAt.Equal(at(15)) && errors.Is(err, domain.ErrConflict)
			}},
		{"reused", foldJoin(issued, redeemed), jointoken.Redeem{TokenID: "jt-1", SecretHash: hash, NodeID: "n", At: at(2)},
			func(err error) bool {
				var ue *jointoken.UsedError
				return errors.As(err, &ue) && ue.NodeID == "node-1" && errors.Is(err, domain.ErrConflict) &&
					strings.Contains(err.Error(), "new join token")
			}},
		{"revoked", foldJoin(issued, revoked), jointoken.Redeem{TokenID: "jt-1", SecretHash: hash, NodeID: "n", At: at(3)},
			func(err error) bool { var se *domain.StateError; return errors.As(err, &se) && se.State == "revoked" }},
		{"bad node id", active, jointoken.Redeem{TokenID: "jt-1", SecretHash: hash, NodeID: "a b", At: at(1)},
			func(err error) bool {
				var ve *domain.ValidationError
				return errors.As(err, &ve) && ve.Field == "nodeId"
			}},
	}
	for _, c := range cases {
		if _, err := c.state.Redeem(c.cmd); !c.check(err) {
			t.Errorf("%s: unexpected %v", c.name, err)
		}
	}
	if !active.Redeemable(at(14)) || active.Redeemable(at(15)) {
		t.Error("Redeemable ignores the expiry")
	}
}

func TestCredentialMatrix(t *testing.T) {
	t.Parallel()
	issue := func(x jointoken.Credential) ([]domain.Event, error) {
		return x.Issue(jointoken.IssueCredential{NodeID: "node-1", SecretHash: hash, At: at(1)})
	}
	revoke := func(x jointoken.Credential) ([]domain.Event, error) {
		return x.Revoke(jointoken.RevokeCredential{NodeID: "node-1", At: at(4)})
	}
	active, gone := foldCred(credIss), foldCred(credIss, credRev)
	if es, err := issue(jointoken.Credential{}); err != nil || foldCred(es...).Status != jointoken.CredentialStatusActive {
		t.Fatalf("issue: %v %v", es, err)
	}
	for name, st := range map[string]jointoken.Credential{"active": active, "revoked": gone} {
		if _, err := issue(st); !errors.Is(err, domain.ErrConflict) {
			t.Errorf("issue on %s: %v", name, err)
		}
	}
	es, err := revoke(active)
	if err != nil || foldCred(append([]domain.Event{credIss}, es...)...).Status != jointoken.CredentialStatusRevoked {
		t.Fatalf("revoke: %v %v", es, err)
	}
	if _, err := revoke(gone); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("revoke twice: %v", err)
	}
	if _, err := revoke(jointoken.Credential{}); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("revoke missing: %v", err)
	}
	if !slices.Equal(jointoken.CredentialAllowedCommands(jointoken.CredentialStatusActive), []string{jointoken.CmdRevokeCredential}) {
		t.Error("active credential table")
	}
	// Zero expiry lasts until revoked; a set expiry is honoured.
	if !active.Usable(at(1_000_000)) || gone.Usable(at(2)) {
		t.Error("usability ignores revocation")
	}
	expiring := foldCred(jointoken.CredentialIssued{NodeID: "node-1", SecretHash: hash, ExpiresAt: at(10), At: at(1)})
	if !expiring.Usable(at(9)) || expiring.Usable(at(10)) {
		t.Error("usability ignores the expiry")
	}
}

func TestValidation(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, field string
		run         func() ([]domain.Event, error)
	}{
		{"token id", "tokenId", func() ([]domain.Event, error) {
			return jointoken.JoinToken{}.Issue(jointoken.Issue{TokenID: "a b", SecretHash: hash, ExpiresAt: at(1), At: at(0)})
		}},
		{"hash", "secretHash", func() ([]domain.Event, error) {
			return jointoken.JoinToken{}.Issue(jointoken.Issue{TokenID: "t", SecretHash: "secret", ExpiresAt: at(1), At: at(0)})
		}},
		{"labels", "labels", func() ([]domain.Event, error) {
			return jointoken.JoinToken{}.Issue(jointoken.Issue{TokenID: "t", SecretHash: hash, Labels: map[string]string{"Bad": "x"}, ExpiresAt: at(1), At: at(0)})
		}},
		{"location", "locationId", func() ([]domain.Event, error) {
			return jointoken.JoinToken{}.Issue(jointoken.Issue{TokenID: "t", SecretHash: hash, LocationID: "a b", ExpiresAt: at(1), At: at(0)})
		}},
		{"expired at issue", "expiresAt", func() ([]domain.Event, error) {
			return jointoken.JoinToken{}.Issue(jointoken.Issue{TokenID: "t", SecretHash: hash, ExpiresAt: at(0), At: at(0)})
		}},
		{"too long-lived", "expiresAt", func() ([]domain.Event, error) {
			return jointoken.JoinToken{}.Issue(jointoken.Issue{TokenID: "t", SecretHash: hash, ExpiresAt: at(0).Add(jointoken.MaxLifetime + time.Second), At: at(0)})
		}},
		{"time", "at", func() ([]domain.Event, error) {
			return jointoken.JoinToken{}.Issue(jointoken.Issue{TokenID: "t", SecretHash: hash, ExpiresAt: at(1)})
		}},
		{"revoke reason", "reason", func() ([]domain.Event, error) {
			return foldJoin(issued).Revoke(jointoken.Revoke{TokenID: "jt-1", Reason: "\x07", At: at(1)})
		}},
		{"credential hash", "secretHash", func() ([]domain.Event, error) {
			return jointoken.Credential{}.Issue(jointoken.IssueCredential{NodeID: "n", At: at(0)})
		}},
		{"credential expiry", "expiresAt", func() ([]domain.Event, error) {
			return jointoken.Credential{}.Issue(jointoken.IssueCredential{NodeID: "n", SecretHash: hash, ExpiresAt: at(0), At: at(0)})
		}},
		{"credential node", "nodeId", func() ([]domain.Event, error) {
			return foldCred(credIss).Revoke(jointoken.RevokeCredential{NodeID: "node-2", At: at(5)})
		}},
	}
	for _, c := range cases {
		_, err := c.run()
		var ve *domain.ValidationError
		if !errors.As(err, &ve) || ve.Field != c.field || !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("%s: want validation error on %s, got %v", c.name, c.field, err)
		}
	}
}

func TestEventsRoundTrip(t *testing.T) {
	t.Parallel()
	type applier interface{ Apply(domain.Event) }
	samples := []struct {
		event domain.Event
		state func() applier
	}{
		{issued, func() applier { return &jointoken.JoinToken{} }},
		{redeemed, func() applier { x := foldJoin(issued); return &x }},
		{revoked, func() applier { x := foldJoin(issued); return &x }},
		{credIss, func() applier { return &jointoken.Credential{} }},
		{credRev, func() applier { x := foldCred(credIss); return &x }},
	}
	reg := domain.NewRegistry()
	jointoken.RegisterEvents(reg)
	var types []string
	for _, s := range samples {
		types = append(types, s.event.EventType())
	}
	slices.Sort(types)
	if !slices.Equal(types, reg.Types()) {
		t.Fatalf("samples cover %v, registered %v", types, reg.Types())
	}
	for _, s := range samples {
		typ, v, payload, err := reg.Encode(s.event)
		if err != nil || v != 1 {
			t.Fatalf("encode %T: %v", s.event, err)
		}
		decoded, err := reg.Decode(typ, v, json.RawMessage(payload))
		if err != nil {
			t.Fatalf("decode %s: %v", typ, err)
		}
		if got := decoded; !reflect.DeepEqual(got, s.event) {
			t.Errorf("%s round trip:\n got %#v\nwant %#v", typ, got, s.event)
		}
		base, fromValue, fromPointer := s.state(), s.state(), s.state()
		fromValue.Apply(s.event)
		fromPointer.Apply(decoded)
		if !reflect.DeepEqual(fromValue, fromPointer) || reflect.DeepEqual(fromValue, base) {
			t.Errorf("%s: Apply(value) = %+v, Apply(decoded) = %+v, before %+v", typ, fromValue, fromPointer, base)
		}
	}
}
