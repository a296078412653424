package apiserver

import "minik8s/pkg/lib"

var _ = lib.Phase

func Serve() {}
