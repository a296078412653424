// Package cluster wires components together.
package cluster

import (
	"minik8s/apiserver"
	"minik8s/controller/functions"
	_ "minik8s/kubelet/pod"
	"minik8s/mkctl"
)

var (
	_ = apiserver.Serve
	_ = functions.Count
	_ = mkctl.Run
)

func Up() {}
