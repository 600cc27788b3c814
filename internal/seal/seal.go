// Package seal encrypts the secrets Cairn records (sensitive service
// variables, a job's secret arguments and environment) so that the log, the
// read models and a database dump hold only ciphertext. A sealed value is
// bound to a purpose (additional authenticated data naming what it is for),
// so a value copied to another purpose does not open.
package seal

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
)

// KeySize is the size of the key: AES-256.
const KeySize = 32

// algorithm marks a sealed value and names how it was sealed, so that a
// later build can tell its own format from an older one.
const algorithm = "aes-256-gcm"

// sealed is how a value is recorded.
type sealed struct {
	Algorithm  string `json:"sealed"`
	Nonce      string `json:"nonce"`      // base64, 12 bytes, random per value
	Ciphertext string `json:"ciphertext"` // base64, with the GCM tag
}

// Sealer seals and opens values with one key. Losing the key loses every
// value sealed with it.
type Sealer struct {
	aead   cipher.AEAD
	macKey []byte
}

// New returns a Sealer for a 32-byte key.
func New(key []byte) (*Sealer, error) {
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
	// A separate key for MACs, so no output of one use helps against the
	// other.
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("cairn command fingerprint"))
	return &Sealer{aead: aead, macKey: mac.Sum(nil)}, nil
}

// Seal encrypts value for a purpose and returns the JSON recorded for it.
func (s *Sealer) Seal(purpose string, value []byte) (json.RawMessage, error) {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("draw a nonce: %w", err)
	}
	ct := s.aead.Seal(nil, nonce, value, []byte(purpose))
	return json.Marshal(sealed{
		Algorithm:  algorithm,
		Nonce:      base64.StdEncoding.EncodeToString(nonce),
		Ciphertext: base64.StdEncoding.EncodeToString(ct),
	})
}

// ErrNotSealed is a value that is not one Seal produced.
var ErrNotSealed = errors.New("not a sealed value")

// Open decrypts a value Seal produced for the same purpose.
func (s *Sealer) Open(purpose string, value json.RawMessage) ([]byte, error) {
	var v sealed
	if err := json.Unmarshal(value, &v); err != nil || v.Algorithm != algorithm {
		return nil, fmt.Errorf("%w with %s", ErrNotSealed, algorithm)
	}
	nonce, err1 := base64.StdEncoding.DecodeString(v.Nonce)
	ct, err2 := base64.StdEncoding.DecodeString(v.Ciphertext)
	if err := errors.Join(err1, err2); err != nil || len(nonce) != s.aead.NonceSize() {
		return nil, errors.New("the sealed value is malformed")
	}
	clear, err := s.aead.Open(nil, nonce, ct, []byte(purpose))
	if err != nil {
		return nil, errors.New("the sealed value does not open: wrong key, or it was altered or copied from elsewhere")
	}
	return clear, nil
}

// IsSealed reports whether value looks like one Seal produced.
func IsSealed(value json.RawMessage) bool {
	var v sealed
	return json.Unmarshal(value, &v) == nil && v.Algorithm == algorithm
}

// MAC is a keyed hash of data: it lets a command's fingerprint cover
// secret input without the log holding anything a guesser could check
// guesses against.
func (s *Sealer) MAC(data []byte) []byte {
	m := hmac.New(sha256.New, s.macKey)
	m.Write(data)
	return m.Sum(nil)
}
