package auth

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"minik8s/pkg/errdefs"
	"minik8s/pkg/rbac"
)

func TestStaticTokens(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       map[string]rbac.User
		invalid    bool
	}{
		{"users and groups", "# comment\nt1,alice,1,\"dev, ops\"\nt2,bob,2\n", map[string]rbac.User{
			"t1": {Name: "alice", Groups: []string{"dev", "ops", rbac.AllAuthenticated}},
			"t2": {Name: "bob", Groups: []string{rbac.AllAuthenticated}},
		}, false},
		{"no uid", "t1,alice\n", nil, true},
		{"no user", "t1,,1\n", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tokens.csv")
			if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := StaticTokens(path)
			if tc.invalid {
				if !errdefs.IsInvalid(err) || errdefs.Field(err) != "token-auth-file" {
					t.Fatalf("got %v, %v; want invalid token-auth-file", got, err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	if got, err := StaticTokens(""); got != nil || err != nil {
		t.Fatalf("no file: %v, %v", got, err)
	}
}
