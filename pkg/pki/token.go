package pki

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// NodeToken is the token a node joins with: K10, the hash of the CA it
// must see, and the secret (k3s's format), so that a node trusts the
// server before it sends the secret.
func NodeToken(caPEM []byte, secret string) string {
	sum := sha256.Sum256(caPEM)
	return "K10" + hex.EncodeToString(sum[:]) + "::node:" + secret
}

// ParseNodeToken splits a node token into the CA hash (empty for a bare
// secret) and the secret.
func ParseNodeToken(token string) (caHash, secret string) {
	if rest, ok := strings.CutPrefix(token, "K10"); ok {
		if hash, s, ok := strings.Cut(rest, "::node:"); ok {
			return hash, s
		}
	}
	return "", token
}

// CAHash is the hash a node token carries of the CA.
func CAHash(caPEM []byte) string {
	sum := sha256.Sum256(caPEM)
	return hex.EncodeToString(sum[:])
}
