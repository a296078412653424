package auth

import "minik8s/pkg/lib"

var _ = lib.Phase

// Allowed says whether user may.
func Allowed(user string) bool { return user != "" }
