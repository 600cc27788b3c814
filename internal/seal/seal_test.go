package seal_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"cairn/internal/seal"
)

func newSealer(t *testing.T, fill byte) *seal.Sealer {
	t.Helper()
	s, err := seal.New(bytes.Repeat([]byte{fill}, seal.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNewRefusesAKeyOfTheWrongSize(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 16, 31, 33, 64} {
		if _, err := seal.New(make([]byte, n)); err == nil {
			t.Errorf("a %d-byte key was accepted", n)
		}
	}
}

func TestSealOpensOnlyForItsPurposeAndKey(t *testing.T) {
	t.Parallel()
	s, other := newSealer(t, 1), newSealer(t, 2)
	value := []byte(`"hunter2"`)
	a, err := s.Seal("p", value)
	if err != nil || bytes.Contains(a, []byte("hunter2")) || !seal.IsSealed(a) {
		t.Fatalf("sealed %s %v", a, err)
	}
	if b, _ := s.Seal("p", value); bytes.Equal(a, b) {
		t.Fatal("two seals of one value are equal: nonces repeat")
	}
	if got, err := s.Open("p", a); err != nil || !bytes.Equal(got, value) {
		t.Fatalf("open: %s %v", got, err)
	}
	var v map[string]string
	if err := json.Unmarshal(a, &v); err != nil {
		t.Fatal(err)
	}
	v["ciphertext"] = "AAAA" + v["ciphertext"]
	altered, _ := json.Marshal(v)
	for name, c := range map[string]struct {
		s       *seal.Sealer
		purpose string
		value   json.RawMessage
	}{
		"another purpose": {s, "q", a},
		"another key":     {other, "p", a},
		"altered":         {s, "p", altered},
		"not sealed":      {s, "p", value},
		"not JSON":        {s, "p", json.RawMessage("{")},
	} {
		if got, err := c.s.Open(c.purpose, c.value); err == nil {
			t.Errorf("%s: opened to %s", name, got)
		}
	}
	if _, err := s.Open("p", value); !errors.Is(err, seal.ErrNotSealed) {
		t.Errorf("a clear value: %v, want ErrNotSealed", err)
	}
	if seal.IsSealed(value) {
		t.Error("a clear value reads as sealed")
	}
}

func TestMACIsKeyed(t *testing.T) {
	t.Parallel()
	s, other := newSealer(t, 1), newSealer(t, 2)
	a, b := s.MAC([]byte("x")), s.MAC([]byte("x"))
	if !bytes.Equal(a, b) {
		t.Fatal("the MAC of one input differs between calls")
	}
	if bytes.Equal(a, s.MAC([]byte("y"))) || bytes.Equal(a, other.MAC([]byte("x"))) {
		t.Fatal("the MAC does not depend on its input and key")
	}
	if len(a) != 32 {
		t.Fatalf("a MAC of %d bytes, want HMAC-SHA256's 32", len(a))
	}
}
