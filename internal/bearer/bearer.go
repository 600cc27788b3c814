// Package bearer mints and parses Cairn's bearer secrets: API tokens
// ("cairn_<id>_<secret>"), node credentials (the same, with id
// "node.<node id>") and join tokens ("cairnjoin_<id>_<secret>"). Only the
// SHA-256 of a secret is ever stored; the clear form is shown once.
package bearer

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"fmt"
	"strings"
)

// Kinds of bearer secret, by their prefix.
const (
	APIToken  = "cairn"
	JoinToken = "cairnjoin"
)

// NodeCredentialPrefix starts the id of a node credential inside an API
// token, so that the authenticator knows which stream holds it.
const NodeCredentialPrefix = "node."

// SecretBytes is the entropy of every secret: 256 bits, so guessing is
// hopeless and a fast hash is enough to store it.
const SecretBytes = 32

// secretEncoding is lower-case base32 without padding: no '_' (the
// separator), nothing a shell or URL would mangle.
var secretEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// Minted is a new secret in its clear form and the hash to store.
type Minted struct {
	Clear string // shown to the caller once
	Hash  string // hex SHA-256 of the secret part
}

// Mint makes a new bearer secret of a kind for an id.
func Mint(kind, id string) (Minted, error) {
	b := make([]byte, SecretBytes)
	if _, err := rand.Read(b); err != nil {
		return Minted{}, fmt.Errorf("draw a random secret: %w", err)
	}
	secret := secretEncoding.EncodeToString(b)
	return Minted{Clear: kind + "_" + id + "_" + secret, Hash: Hash(secret)}, nil
}

// Hash is the hex SHA-256 of a secret: what the log keeps.
func Hash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// Parse splits a bearer secret of the given kind into its id and secret. The
// id may hold '_'; the secret never does, so the last '_' separates them.
func Parse(kind, s string) (id, secret string, err error) {
	rest, ok := strings.CutPrefix(s, kind+"_")
	if !ok {
		return "", "", fmt.Errorf("does not start with %q", kind+"_")
	}
	i := strings.LastIndexByte(rest, '_')
	if i <= 0 || i == len(rest)-1 {
		return "", "", fmt.Errorf("is not %s_<id>_<secret>", kind)
	}
	id, secret = rest[:i], rest[i+1:]
	if n, err := secretEncoding.DecodeString(secret); err != nil || len(n) != SecretBytes {
		return "", "", fmt.Errorf("secret of token %q is not %d bytes of base32", id, SecretBytes)
	}
	return id, secret, nil
}
