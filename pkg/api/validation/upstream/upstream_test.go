package upstream

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// TestEveryKubernetesKindIsJudged: every kind the apiserver serves that
// Kubernetes defines goes through Kubernetes' rules; a kind added to
// api.Resources without them fails here.
func TestEveryKubernetesKindIsJudged(t *testing.T) {
	for _, res := range api.Resources {
		own := slices.Contains(api.FuncGroupResources, res.Name)
		if Known(res) == own {
			t.Errorf("%s: judged by Kubernetes' rules %v, want %v", res.Kind, Known(res), !own)
		}
	}
}

// TestInvalidIsKubernetesStatus: the 422 reads as Kubernetes' NewInvalid.
func TestInvalidIsKubernetesStatus(t *testing.T) {
	errs := field.ErrorList{
		field.Required(field.NewPath("spec", "containers").Index(0).Child("image"), ""),
		field.Invalid(field.NewPath("spec", "nodeName"), "../../x", "must be a DNS subdomain"),
	}
	err := Invalid(api.DeploymentsResource, "web", errs)
	want := `Deployment.apps "web" is invalid: [spec.containers[0].image: Required value, spec.nodeName: Invalid value: "../../x": must be a DNS subdomain]`
	if !errdefs.IsInvalid(err) || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
	io, _ := errdefs.AsInvalidObject(err)
	if len(io.Causes) != 2 || io.Causes[0].Type != "FieldValueRequired" || io.Causes[1].Field != "spec.nodeName" ||
		!strings.HasPrefix(io.Causes[1].Message, "Invalid value") || errdefs.Field(err) != "spec.containers[0].image" {
		t.Errorf("causes %+v", io.Causes)
	}
	if Invalid(api.PodsResource, "p", nil) != nil {
		t.Error("no errors is no error")
	}
}

// TestContainerPortZero: a port the kubelet allocates (containerPort 0) is
// minik8s's, and passes; its other fields are still judged.
func TestContainerPortZero(t *testing.T) {
	pod := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "p", Namespace: "default"}, Spec: api.PodSpec{
		RestartPolicy: "Always", HostNetwork: true,
		Containers: []api.Container{{Name: "c", Image: "i", Ports: []api.ContainerPort{{Name: "a"}, {Name: "b"}}},
			{Name: "d", Image: "i", Ports: []api.ContainerPort{{}}}}}}
	if errs, ok := Create(api.PodsResource, pod); len(errs) > 0 || !ok {
		t.Fatalf("allocated ports: %v", errs)
	}
	pod.Spec.Containers[0].Ports[1].Name = "Bad Name"
	if errs, _ := Create(api.PodsResource, pod); len(errs) != 1 || errs[0].Field != "spec.containers[0].ports[1].name" {
		t.Fatalf("bad port name: %v", errs)
	}
}

// TestVolumePathsStayInside: a mount's subPath and a ConfigMap or Secret
// item's path that would lead out of the volume are Kubernetes' 422,
// before the kubelet ever sees them (which refuses them too).
func TestVolumePathsStayInside(t *testing.T) {
	for _, tc := range []struct {
		name  string
		vol   api.Volume
		sub   string
		field string
	}{
		{"subPath", api.Volume{Name: "v", EmptyDir: &api.EmptyDirVolumeSource{}}, "../x", "spec.containers[0].volumeMounts.subPath"},          // Kubernetes names no index here
		{"absolute subPath", api.Volume{Name: "v", EmptyDir: &api.EmptyDirVolumeSource{}}, "/etc", "spec.containers[0].volumeMounts.subPath"}, // Kubernetes names no index here
		{"configMap item", api.Volume{Name: "v", ConfigMap: &api.ConfigMapVolumeSource{Name: "c", Items: []corev1.KeyToPath{{Key: "k", Path: "../x"}}}}, "",
			"spec.volumes[0].configMap.items[0].path"},
		{"secret item", api.Volume{Name: "v", Secret: &api.SecretVolumeSource{SecretName: "s", Items: []corev1.KeyToPath{{Key: "k", Path: "/x"}}}}, "",
			"spec.volumes[0].secret.items[0].path"},
	} {
		pod := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "p", Namespace: "default"}, Spec: api.PodSpec{
			RestartPolicy: "Always", DNSPolicy: "ClusterFirst", Volumes: []api.Volume{tc.vol},
			Containers: []api.Container{{Name: "c", Image: "i", ImagePullPolicy: "IfNotPresent", TerminationMessagePolicy: "File",
				VolumeMounts: []api.VolumeMount{{Name: "v", MountPath: "/v", SubPath: tc.sub}}}}}}
		errs, _ := Create(api.PodsResource, pod)
		found := false
		for _, e := range errs {
			found = found || e.Field == tc.field
		}
		if !found {
			t.Errorf("%s: %v, want an error on %s", tc.name, errs, tc.field)
		}
	}
}
