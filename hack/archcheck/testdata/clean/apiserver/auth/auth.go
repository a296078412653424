package auth

import "minik8s/apiserver"

var _ = apiserver.Serve
