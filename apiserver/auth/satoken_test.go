package auth

import (
	"math"
	"testing"

	"minik8s/pkg/errdefs"
)

// TestTokenExpirationBounds: Kubernetes' ValidateTokenRequest bounds.
func TestTokenExpirationBounds(t *testing.T) {
	for _, tc := range []struct {
		exp   int64
		valid bool
	}{
		{-5, false}, {0, false}, {599, false}, {600, true}, {3600, true}, {MaxTokenSeconds + 1, true},
		{1 << 32, true}, {1<<32 + 1, false}, {math.MaxInt64, false}, {math.MinInt64, false},
	} {
		err := ValidExpiration(tc.exp)
		if tc.valid != (err == nil) || (err != nil && !errdefs.IsInvalid(err)) {
			t.Errorf("expirationSeconds %d: %v, want valid %v (else 422)", tc.exp, err, tc.valid)
		}
	}
}
