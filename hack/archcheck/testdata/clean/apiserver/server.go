package apiserver

import (
	"minik8s/apiserver/auth"
	"minik8s/pkg/lib"
)

var _ = lib.Phase

// The parent stands on its rooms.
var _ = auth.Allowed

func Serve() {}
