package funcrunner

import (
	"strings"
	"testing"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
)

func TestCheckSize(t *testing.T) {
	inst := &api.FuncInstance{ObjectMeta: api.ObjectMeta{Name: "i"}, Spec: api.FuncInstanceSpec{Arg: api.Bytes(strings.Repeat("a", 1000))}}
	for _, tc := range []struct {
		name  string
		limit int
		large bool
	}{
		{"under the limit", 2000, false},
		{"over the limit", 500, true},
		{"no limit given: the default", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkSize(inst, tc.limit)
			if errdefs.IsTooLarge(err) != tc.large {
				t.Fatalf("checkSize(%d): %v, too large %v", tc.limit, err, tc.large)
			}
			if tc.large && !strings.Contains(err.Error(), "bytes once encoded") {
				t.Errorf("error %q does not say the encoded size", err)
			}
		})
	}
}

func TestConfigMaxInstanceBytes(t *testing.T) {
	for _, tc := range []struct{ set, want int }{
		{0, function.MaxInstanceBytes},
		{1 << 20, 1 << 20},
		{function.MaxInstanceBytes + 1, function.MaxInstanceBytes},
	} {
		c := Config{MaxInstanceBytes: tc.set}
		c.setDefaults()
		if c.MaxInstanceBytes != tc.want {
			t.Errorf("MaxInstanceBytes %d: defaulted to %d, want %d", tc.set, c.MaxInstanceBytes, tc.want)
		}
	}
}
