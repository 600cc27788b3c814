package bearer_test

import (
	"strings"
	"testing"

	"cairn/internal/bearer"
)

func TestMintAndParse(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"tok-1", "node.n_1", "a"} {
		m, err := bearer.Mint(bearer.APIToken, id)
		if err != nil {
			t.Fatal(err)
		}
		gotID, secret, err := bearer.Parse(bearer.APIToken, m.Clear)
		if err != nil || gotID != id || bearer.Hash(secret) != m.Hash || strings.Contains(m.Clear, m.Hash) {
			t.Fatalf("%s: %q -> %q %q %v", id, m.Clear, gotID, secret, err)
		}
		if len(secret) < 52 {
			t.Fatalf("secret %q carries less than 256 bits", secret)
		}
	}
	a, _ := bearer.Mint(bearer.APIToken, "x")
	b, _ := bearer.Mint(bearer.APIToken, "x")
	if a.Clear == b.Clear {
		t.Fatal("two mints gave the same secret")
	}
}

func TestParseRefuses(t *testing.T) {
	t.Parallel()
	good, _ := bearer.Mint(bearer.APIToken, "tok")
	join, _ := bearer.Mint(bearer.JoinToken, "tok")
	for _, s := range []string{
		"", "cairn_", "cairn__x", "cairn_tok_", "cairn_tok", "Bearer " + good.Clear, join.Clear,
		good.Clear + "a", strings.ToUpper(good.Clear), "cairn_tok_short",
	} {
		if _, _, err := bearer.Parse(bearer.APIToken, s); err == nil {
			t.Errorf("%q parsed", s)
		}
	}
	if _, _, err := bearer.Parse(bearer.JoinToken, join.Clear); err != nil {
		t.Errorf("join token: %v", err)
	}
}
