package services

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// KeySize is the size of the key that seals sensitive variables: AES-256.
const KeySize = 32

// sealedAlgorithm marks a sealed value and names how it was sealed, so that a
// later build can tell its own format from an older one.
const sealedAlgorithm = "aes-256-gcm"

// sealed is how a sensitive variable's value is recorded in the log.
type sealed struct {
	Algorithm  string `json:"sealed"`
	Nonce      string `json:"nonce"`      // base64, 12 bytes, random per value
	Ciphertext string `json:"ciphertext"` // base64, with the GCM tag
}

// Secrets seals the values of sensitive variables before they are recorded
// and opens them for the orchestrator, which hands them to plugins only.
// Each value is bound to its service and variable name (as additional
// authenticated data), so a sealed value copied into another service or
// variable does not open.
type Secrets struct {
	aead   cipher.AEAD
	macKey []byte
}

// NewSecrets returns Secrets sealing with a 32-byte key. Losing the key
// loses every sensitive value recorded with it.
func NewSecrets(key []byte) (*Secrets, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("the secrets key must be %d bytes, not %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	// A separate key for fingerprints, so no output of one use helps
	// against the other.
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("cairn command fingerprint"))
	return &Secrets{aead: aead, macKey: mac.Sum(nil)}, nil
}

func additionalData(serviceID, name string) []byte {
	return []byte("cairn service variable\x00" + serviceID + "\x00" + name)
}

// Seal encrypts one variable's JSON value.
func (s *Secrets) Seal(serviceID, name string, value json.RawMessage) (json.RawMessage, error) {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("draw a nonce: %w", err)
	}
	ct := s.aead.Seal(nil, nonce, value, additionalData(serviceID, name))
	return json.Marshal(sealed{
		Algorithm:  sealedAlgorithm,
		Nonce:      base64.StdEncoding.EncodeToString(nonce),
		Ciphertext: base64.StdEncoding.EncodeToString(ct),
	})
}

// Open decrypts a value Seal produced for the same service and variable.
func (s *Secrets) Open(serviceID, name string, value json.RawMessage) (json.RawMessage, error) {
	var v sealed
	if err := json.Unmarshal(value, &v); err != nil || v.Algorithm != sealedAlgorithm {
		return nil, fmt.Errorf("variable %q of service %q is not sealed with %s", name, serviceID, sealedAlgorithm)
	}
	nonce, err1 := base64.StdEncoding.DecodeString(v.Nonce)
	ct, err2 := base64.StdEncoding.DecodeString(v.Ciphertext)
	if err := errors.Join(err1, err2); err != nil || len(nonce) != s.aead.NonceSize() {
		return nil, fmt.Errorf("variable %q of service %q: sealed value is malformed", name, serviceID)
	}
	clear, err := s.aead.Open(nil, nonce, ct, additionalData(serviceID, name))
	if err != nil {
		return nil, fmt.Errorf("variable %q of service %q does not open: wrong key, or the value was altered or copied from elsewhere", name, serviceID)
	}
	return clear, nil
}

// SealSensitive returns vars with the values of the sensitive variables
// sealed. JSON null (an optional variable left out) holds no secret and
// stays null.
func (s *Secrets) SealSensitive(serviceID string, vars map[string]json.RawMessage, sensitive []string) (map[string]json.RawMessage, error) {
	out := make(map[string]json.RawMessage, len(vars))
	for name, v := range vars {
		if slices.Contains(sensitive, name) && string(v) != "null" {
			sv, err := s.Seal(serviceID, name, v)
			if err != nil {
				return nil, err
			}
			v = sv
		}
		out[name] = v
	}
	return out, nil
}

// Decrypt turns a service's recorded variables (a JSON object) back into
// clear values, opening those of the sensitive variables. Only the
// orchestrator calls it, to hand values to plugins; never log the result.
func (s *Secrets) Decrypt(serviceID string, recorded json.RawMessage, sensitive []string) (map[string]json.RawMessage, error) {
	vars := map[string]json.RawMessage{}
	if len(recorded) == 0 {
		return vars, nil
	}
	if err := json.Unmarshal(recorded, &vars); err != nil {
		return nil, fmt.Errorf("variables of service %q are not a JSON object: %w", serviceID, err)
	}
	for name, v := range vars {
		if !slices.Contains(sensitive, name) || string(v) == "null" {
			continue
		}
		clear, err := s.Open(serviceID, name, v)
		if err != nil {
			return nil, err
		}
		vars[name] = clear
	}
	return vars, nil
}

// mac is a keyed hash: it lets a command's fingerprint cover secret input
// without the log holding anything a guesser could check guesses against.
func (s *Secrets) mac(data []byte) []byte {
	m := hmac.New(sha256.New, s.macKey)
	m.Write(data)
	return m.Sum(nil)
}
