package services_test

import (
	"encoding/json"
	"strings"
	"testing"

	"cairn/commands/services"
)

func TestSealAndOpen(t *testing.T) {
	t.Parallel()
	s := services.NewSecrets(newSealer(t))
	value := json.RawMessage(`{"user":"root","pass":"s3cr3t"}`)
	a, err := s.SealVariable("svc-1", "creds", value)
	if err != nil || strings.Contains(string(a), "s3cr3t") {
		t.Fatalf("sealed %s %v", a, err)
	}
	b, _ := s.SealVariable("svc-1", "creds", value)
	if string(a) == string(b) {
		t.Fatal("two seals of one value are equal: nonces repeat")
	}
	if got, err := s.OpenVariable("svc-1", "creds", a); err != nil || string(got) != string(value) {
		t.Fatalf("open: %s %v", got, err)
	}
	other := services.NewSecrets(newSealer(t))
	tampered := strings.Replace(string(a), `"ciphertext":"`, `"ciphertext":"AAAA`, 1)
	refusals := map[string]func() (json.RawMessage, error){
		"another service":  func() (json.RawMessage, error) { return s.OpenVariable("svc-2", "creds", a) },
		"another variable": func() (json.RawMessage, error) { return s.OpenVariable("svc-1", "token", a) },
		"another key":      func() (json.RawMessage, error) { return other.OpenVariable("svc-1", "creds", a) },
		"altered":          func() (json.RawMessage, error) { return s.OpenVariable("svc-1", "creds", json.RawMessage(tampered)) },
		"not sealed":       func() (json.RawMessage, error) { return s.OpenVariable("svc-1", "creds", value) },
	}
	for name, open := range refusals {
		if got, err := open(); err == nil {
			t.Errorf("%s: opened to %s", name, got)
		}
	}
}

func TestDecryptOpensOnlySensitiveValues(t *testing.T) {
	t.Parallel()
	s := services.NewSecrets(newSealer(t))
	vars := map[string]json.RawMessage{"pw": json.RawMessage(`"hunter2"`), "size": json.RawMessage(`"s"`), "opt": json.RawMessage(`null`)}
	sealed, err := s.SealSensitive("svc", vars, []string{"pw", "opt"})
	if err != nil || string(sealed["size"]) != `"s"` || string(sealed["opt"]) != "null" || strings.Contains(string(sealed["pw"]), "hunter2") {
		t.Fatalf("sealed %s %v", sealed, err)
	}
	recorded, _ := json.Marshal(sealed)
	clear, err := s.Decrypt("svc", recorded, []string{"pw", "opt"})
	if err != nil || string(clear["pw"]) != `"hunter2"` || string(clear["size"]) != `"s"` || string(clear["opt"]) != "null" {
		t.Fatalf("decrypted %s %v", clear, err)
	}
	if out, err := s.Decrypt("svc", nil, nil); err != nil || len(out) != 0 {
		t.Fatalf("no variables: %v %v", out, err)
	}
	if _, err := s.Decrypt("svc", json.RawMessage(`[1]`), nil); err == nil {
		t.Fatal("a non-object was decrypted")
	}
}
