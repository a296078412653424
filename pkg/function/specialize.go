package function

import (
	"minik8s/pkg/api"
)

const (
	// SpecializePath is where a generic runtime pod takes the function it
	// is to serve, on its SpecializePortName port, over TLS, from function
	// runners only.
	SpecializePath     = "/specialize"
	SpecializePortName = "specialize"
)

// Specialization is what a generic runtime pod is handed to serve a
// Python function: what its own pod would have from its ConfigMap volume
// (Files, function.py and preRun.sh among them) and from its env.
type Specialization struct {
	// Func names the function, CodeHash its code (CodeHash): the same
	// specialization given twice is no change, another one a conflict.
	Func     string            `json:"func"`
	CodeHash string            `json:"codeHash"`
	Files    map[string]string `json:"files"`
	Env      []api.EnvVar      `json:"env"`
}

// Specialize is the specialization that makes a generic pod serve f.
func Specialize(f *api.Func) (*Specialization, error) {
	cm, err := CodeConfigMap(f)
	if err != nil {
		return nil, err
	}
	return &Specialization{Func: f.Name, CodeHash: CodeHash(&f.Spec), Files: cm.Data, Env: RuntimeEnv(f)}, nil
}
