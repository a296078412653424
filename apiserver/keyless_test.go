package apiserver

import "testing"

func TestKeyless(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/registry/pods/default/web: not found", `pods "web" not found`},
		{"/registry/funcs/audit/audit-big: already exists", `funcs "audit-big" already exists`},
		{"/registry/nodes/node-1: not found", `nodes "node-1" not found`},
		{"storing the call: /registry/funcinstances/a/5f0e: already exists", `storing the call: funcinstances "5f0e" already exists`},
		{"one of 3 keys (the first /registry/configmaps/x/c1) is taken: already exists", "one of 3 keys (the first /registry/configmaps/x/c1) is taken: already exists"},
		{"spec.function: required", "spec.function: required"},
	} {
		if got := keyless(tc.in); got != tc.want {
			t.Errorf("keyless(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
