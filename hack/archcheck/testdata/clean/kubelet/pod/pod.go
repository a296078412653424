package pod

import "minik8s/kubelet/runtime"

var _ runtime.Runtime
