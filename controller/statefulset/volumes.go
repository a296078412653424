package statefulset

import "minik8s/pkg/api"

// setClaimVolume makes the pod's volume named name mount claim, replacing
// a template's volume of that name, as Kubernetes' updateStorage does.
func setClaimVolume(spec *api.PodSpec, name, claim string) {
	v := api.Volume{Name: name, PersistentVolumeClaim: &api.PersistentVolumeClaimVolumeSource{ClaimName: claim}}
	for i := range spec.Volumes {
		if spec.Volumes[i].Name == name {
			spec.Volumes[i] = v
			return
		}
	}
	spec.Volumes = append(spec.Volumes, v)
}
