// Package qos is a pod's quality of service class, as Kubernetes computes
// it (with its own helper): Guaranteed when every container's requests
// equal its limits for CPU and memory, BestEffort when none asks
// anything, Burstable otherwise.
package qos

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/apis/core/v1/helper/qos"

	"minik8s/pkg/api"
)

// Class is p's class ("" if its spec cannot be read as Kubernetes').
func Class(p *api.Pod) string {
	var spec corev1.PodSpec
	raw, err := json.Marshal(&p.Spec)
	if err == nil {
		err = json.Unmarshal(raw, &spec)
	}
	if err != nil {
		return ""
	}
	// Kubernetes' defaulting makes a limit without a request its request
	// before the class is computed.
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			r := &cs[i].Resources
			for name, q := range r.Limits {
				if _, ok := r.Requests[name]; !ok {
					if r.Requests == nil {
						r.Requests = corev1.ResourceList{}
					}
					r.Requests[name] = q
				}
			}
		}
	}
	return string(qos.ComputePodQOS(&corev1.Pod{Spec: spec}))
}
