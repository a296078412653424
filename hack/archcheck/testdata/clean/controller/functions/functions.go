// Package functions owns Func.Status.
package functions

import "minik8s/pkg/api"

func Count(f *api.Func) {
	f.Status.Counter++
	f.Status = api.FuncStatus{Counter: f.Status.Counter}
}
