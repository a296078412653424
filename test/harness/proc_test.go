package harness

import "testing"

func TestRefersTo(t *testing.T) {
	for _, tc := range []struct {
		s, dir string
		want   bool
	}{
		{"/tmp/minik8s-test-12", "/tmp/minik8s-test-12", true},
		{"-address /tmp/minik8s-test-12/ctd1/c.sock", "/tmp/minik8s-test-12", true},
		{"--config=/tmp/minik8s-test-12/x", "/tmp/minik8s-test-12", true},
		{"-address /tmp/minik8s-test-123/ctd1/c.sock", "/tmp/minik8s-test-12", false},
		{"/tmp/minik8s-test-123 /tmp/minik8s-test-12/a", "/tmp/minik8s-test-12", true},
		{"/tmp/minik8s-test-12.d", "/tmp/minik8s-test-12", false},
		{"runc --root /tmp/minik8s-test-12 delete", "/tmp/minik8s-test-12", true},
		{"", "/tmp/minik8s-test-12", false},
	} {
		if got := refersTo(tc.s, tc.dir); got != tc.want {
			t.Errorf("refersTo(%q, %q) = %v, want %v", tc.s, tc.dir, got, tc.want)
		}
	}
}
