// Package harness imports no component: libraries' tests may use it.
package harness

import "minik8s/pkg/lib"

var _ = lib.Phase

func Main() {}
