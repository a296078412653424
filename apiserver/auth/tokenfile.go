package auth

import (
	"encoding/csv"
	"fmt"
	"os"
	"strings"

	"minik8s/pkg/errdefs"
	"minik8s/pkg/rbac"
)

// StaticTokens reads a token file in the format of Kubernetes' static
// token file: token,user,uid,"group1,group2" per line, by token ("" reads none).
func StaticTokens(path string) (map[string]rbac.User, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("token auth file: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	r.TrimLeadingSpace = true
	r.Comment = '#'
	recs, err := r.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("token auth file %s: %w", path, err)
	}
	out := map[string]rbac.User{}
	for i, rec := range recs {
		if len(rec) < 3 || rec[0] == "" || rec[1] == "" {
			return nil, errdefs.Invalid("token-auth-file", "%s line %d: want token,user,uid[,\"groups\"]", path, i+1)
		}
		u := rbac.User{Name: rec[1]}
		if len(rec) > 3 && rec[3] != "" {
			for _, g := range strings.Split(rec[3], ",") {
				if g = strings.TrimSpace(g); g != "" {
					u.Groups = append(u.Groups, g)
				}
			}
		}
		u.Groups = append(u.Groups, rbac.AllAuthenticated)
		out[rec[0]] = u
	}
	return out, nil
}
