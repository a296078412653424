package alloc

import (
	"testing"

	"minik8s/pkg/errdefs"
)

func TestParseClusterCIDR(t *testing.T) {
	tests := []struct {
		cidr string
		mask int
		ok   bool
	}{
		{"127.42.0.0/16", 24, true}, {"127.42.0.0/16", 16, true}, {"127.42.0.0/24", 30, true},
		{"127.42.0.0/16", 15, false}, {"127.42.0.0/16", 31, false}, {"127.0.0.0/8", 30, false},
		{"::1/128", 80, false}, {"127.42.0.0", 24, false},
	}
	for _, tt := range tests {
		_, err := ParseClusterCIDR(tt.cidr, tt.mask)
		if (err == nil) != tt.ok {
			t.Errorf("ParseClusterCIDR(%q, %d) = %v, want ok %v", tt.cidr, tt.mask, err, tt.ok)
		}
		if err != nil && !errdefs.IsInvalid(err) {
			t.Errorf("ParseClusterCIDR(%q, %d): error %v is not Invalid", tt.cidr, tt.mask, err)
		}
	}
}
