package auth

import (
	"strconv"
	"testing"
	"time"
)

// The cache never holds more than CacheSize tokens, and stale entries go
// first.
func TestCacheIsBounded(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	a := NewAuthenticator(nil, AuthenticatorOptions{CacheSize: 3, CacheTTL: time.Second})
	a.remember("stale", verified{at: t0}, 0)
	for i := range 10 {
		a.remember(strconv.Itoa(i), verified{at: t0.Add(2 * time.Second)}, 0)
		if len(a.cache) > 3 {
			t.Fatalf("cache holds %d entries", len(a.cache))
		}
		if _, ok := a.cache["stale"]; ok && i >= 2 {
			t.Fatal("a stale entry outlived fresh ones")
		}
	}
	if _, ok, _ := a.cached("9", t0.Add(2*time.Second)); !ok {
		t.Fatal("the newest entry was dropped")
	}
	if _, ok, _ := a.cached("9", t0.Add(3*time.Second)); ok {
		t.Fatal("an entry was trusted past the cache window")
	}
}
