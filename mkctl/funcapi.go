package mkctl

import (
	"minik8s/pkg/api"
	"minik8s/pkg/client"
)

// funcCalls and funcTemplates speak the function API of the reference
// design under /api/funcs, in mkctl's namespace.
func (o *Options) funcCalls() *client.FuncCalls {
	return o.Client().FuncCalls(o.Namespace)
}

// instanceCalls reads a call's instance by its id: the apiserver finds
// its namespace, unless -n names one.
func (o *Options) instanceCalls() *client.FuncCalls {
	if o.NamespaceSet {
		return o.funcCalls()
	}
	return o.Client().FuncCallsByID()
}

func (o *Options) funcTemplates() *client.FuncTemplates {
	return o.Client().FuncTemplates(o.Namespace)
}

func finished(v api.FuncInstanceView) bool {
	return v.Status == api.InstanceSucceeded || v.Status == api.InstanceFailed
}
