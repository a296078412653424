package alloc

import (
	"testing"

	"minik8s/pkg/errdefs"
)

func TestParseServiceCIDR(t *testing.T) {
	tests := []struct {
		cidr string
		ok   bool
	}{
		{"127.1.0.0/16", true}, {"127.64.0.0/12", true}, {"127.1.0.0/30", true},
		{"127.1.0.0/31", false}, {"fd00::/64", false}, {"127.1.0.0", false}, {"", false},
	}
	for _, tt := range tests {
		_, err := ParseServiceCIDR(tt.cidr)
		if (err == nil) != tt.ok {
			t.Errorf("ParseServiceCIDR(%q) = %v, want ok %v", tt.cidr, err, tt.ok)
		}
		if err != nil && !errdefs.IsInvalid(err) {
			t.Errorf("ParseServiceCIDR(%q): error %v is not Invalid", tt.cidr, err)
		}
	}
}
