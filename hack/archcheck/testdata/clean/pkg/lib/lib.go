// Package lib is a library: it imports libraries only.
package lib

import "minik8s/pkg/api"

func Phase(inst *api.FuncInstance) string { return inst.Status.Phase }
