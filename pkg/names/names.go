// Package names generates the names controllers give the objects they
// make, as Kubernetes' generateName does: a base and five random
// characters.
package names

import "crypto/rand"

const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// Generate is base followed by five random lower-case letters and digits.
func Generate(base string) string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return base + string(b)
}
