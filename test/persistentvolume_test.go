package test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik8s/controller"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/localpath"
	"minik8s/scheduler"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

// claimManifest is a claim of class (none: the default, local-path) and a
// pod mounting it that prints what an earlier pod left in it, then adds
// to it.
func claimManifest(claim, class, pod string) string {
	cls := ""
	if class != "" {
		cls = "\n  storageClassName: " + class
	}
	return `apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: ` + claim + `
spec:` + cls + `
  accessModes: ["ReadWriteOnce"]
  resources:
    requests:
      storage: 64Mi
---
apiVersion: v1
kind: Pod
metadata:
  name: ` + pod + `
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: ` + containerdtest.PythonRuntimeImage + `
    command: ["python3", "-c", "import os, time\np = '/data/log'\nprint('found:' + (open(p).read() if os.path.exists(p) else ''), flush=True)\nopen(p, 'a').write('x')\ntime.sleep(3600)"]
    volumeMounts:
    - name: data
      mountPath: /data
  volumes:
  - name: data
    persistentVolumeClaim:
      claimName: ` + claim + `
`
}

// TestPersistentVolumeClaimWithKubectl: on two nodes whose kubelets hold
// node credentials, stock kubectl applies a claim naming no class and a
// pod mounting it; the claim is bound to a volume the local-path
// provisioner made in the pod's node's storage dir, pinned to that node;
// the pod deleted and made again lands there and finds what it wrote;
// kubectl get pvc,pv prints Kubernetes' columns; once the pod and the
// claim are deleted the node's kubelet removes the directory and the
// volume (reclaim policy Delete). Under a class that retains, the volume
// stays Released with its directory; a user's hostPath volume under
// Delete is Failed, its directory kept.
func TestPersistentVolumeClaimWithKubectl(t *testing.T) {
	ctx := context.Background()
	s := framework.StartSecureAPIServer(t, "")
	ctd := containerdtest.StartContainerd(t)
	ctd.ImportPythonRuntime(t)
	framework.StartControllers(t, s, controller.Config{})
	framework.StartScheduler(t, s, scheduler.Config{})
	storage := map[string]string{}
	for i, ip := range []string{"127.0.0.131", "127.0.0.132"} {
		name := "pv-" + string(rune('1'+i))
		k := framework.SecureKubelet(t, s, ctd, name, ip)
		storage[name] = filepath.Join(k.Config.RootDir, "storage")
	}
	c := s.Client
	waitUntil(t, time.Minute, "both nodes to say where they keep volumes", func() bool {
		for name, dir := range storage {
			n, err := c.Nodes().Get(ctx, name)
			if err != nil || n.Annotations[api.AnnotationLocalPathDir] != dir {
				return false
			}
		}
		return true
	})

	manifest := writeManifest(t, "data.yaml", claimManifest("data", "", "writer"))
	mustKubectl(t, s, "persistentvolumeclaim/data created", "apply", "-f", manifest)
	pod := waitPodRunning(t, c, "writer")
	node := pod.Spec.NodeName
	pvc, err := c.PersistentVolumeClaims("default").Get(ctx, "data")
	if err != nil {
		t.Fatal(err)
	}
	if pvc.Status.Phase != api.ClaimBound || pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != api.DefaultStorageClassName {
		t.Fatalf("claim data: phase %s class %v", pvc.Status.Phase, pvc.Spec.StorageClassName)
	}
	pv, err := c.PersistentVolumes().Get(ctx, pvc.Spec.VolumeName)
	if err != nil {
		t.Fatal(err)
	}
	dir := localpath.DirOf(pv)
	if localpath.NodeOf(pv) != node || filepath.Dir(dir) != storage[node] || pv.Spec.PersistentVolumeReclaimPolicy != api.ReclaimDelete {
		t.Fatalf("volume %s: node %q (pod's %q), path %s (node's storage %s), reclaim %s",
			pv.Name, localpath.NodeOf(pv), node, dir, storage[node], pv.Spec.PersistentVolumeReclaimPolicy)
	}
	waitUntil(t, 30*time.Second, "the pod to write into the volume", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "log"))
		return err == nil && string(b) == "x"
	})
	mustKubectl(t, s, "found:\n", "logs", "writer")

	out := mustKubectl(t, s, "persistentvolumeclaim/data", "get", "pvc,pv")
	for _, want := range []string{"STATUS", "VOLUME", "CAPACITY", "ACCESS MODES", "STORAGECLASS", "RECLAIM POLICY", "CLAIM",
		"Bound", pv.Name, "64Mi", "RWO", "local-path", "Delete", "default/data"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get pvc,pv lacks %q:\n%s", want, out)
		}
	}

	// Deleted and made again, the pod goes to the volume's node and
	// finds what it wrote.
	mustKubectl(t, s, `pod "writer" deleted`, "delete", "pod", "writer", "--wait=true", "--timeout=1m")
	mustKubectl(t, s, "pod/writer created", "apply", "-f", manifest)
	if again := waitPodRunning(t, c, "writer"); again.Spec.NodeName != node {
		t.Fatalf("the pod came back on %s, its volume is on %s", again.Spec.NodeName, node)
	}
	waitUntil(t, 30*time.Second, "the pod to find what it wrote", func() bool {
		out, _, _ := kubectl(t, s, "logs", "writer")
		return strings.Contains(out, "found:x")
	})

	// Pod and claim gone: the node removes the directory and the volume.
	mustKubectl(t, s, `pod "writer" deleted`, "delete", "pod", "writer", "--wait=true", "--timeout=1m")
	mustKubectl(t, s, `persistentvolumeclaim "data" deleted`, "delete", "pvc", "data")
	waitUntil(t, time.Minute, "the volume deleted", func() bool {
		_, err := c.PersistentVolumes().Get(ctx, pv.Name)
		return errdefs.IsNotFound(err)
	})
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("the volume's directory %s after its deletion: %v", dir, err)
	}

	t.Run("retain", func(t *testing.T) {
		class := writeManifest(t, "keep.yaml", `apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: keep
provisioner: rancher.io/local-path
reclaimPolicy: Retain
volumeBindingMode: WaitForFirstConsumer
`)
		mustKubectl(t, s, "storageclass.storage.k8s.io/keep created", "apply", "-f", class)
		manifest := writeManifest(t, "kept.yaml", claimManifest("kept", "keep", "keeper"))
		mustKubectl(t, s, "persistentvolumeclaim/kept created", "apply", "-f", manifest)
		waitPodRunning(t, c, "keeper")
		pvc, err := c.PersistentVolumeClaims("default").Get(ctx, "kept")
		if err != nil {
			t.Fatal(err)
		}
		pv := mustVolume(t, c, pvc.Spec.VolumeName)
		dir := localpath.DirOf(pv)
		if filepath.Dir(dir) != storage[localpath.NodeOf(pv)] {
			t.Fatalf("volume %s: path %s, not in its node's storage dir", pv.Name, dir)
		}
		waitUntil(t, 30*time.Second, "the pod to write into the volume", func() bool {
			_, err := os.Stat(filepath.Join(dir, "log"))
			return err == nil
		})
		mustKubectl(t, s, `pod "keeper" deleted`, "delete", "pod", "keeper", "--wait=true", "--timeout=1m")
		mustKubectl(t, s, `persistentvolumeclaim "kept" deleted`, "delete", "pvc", "kept")
		waitUntil(t, time.Minute, "the volume Released", func() bool {
			return mustVolume(t, c, pv.Name).Status.Phase == api.VolumeReleased
		})
		time.Sleep(3 * time.Second) // what a deleter would do, it would have done
		if got := mustVolume(t, c, pv.Name); got.Status.Phase != api.VolumeReleased {
			t.Errorf("retained volume: phase %s", got.Status.Phase)
		}
		if _, err := os.Stat(filepath.Join(dir, "log")); err != nil {
			t.Errorf("retained volume's data: %v", err)
		}
		mustKubectl(t, s, "Released", "get", "pv", pv.Name)
	})

	t.Run("a user's hostPath under Delete", func(t *testing.T) {
		user := t.TempDir()
		if err := os.WriteFile(filepath.Join(user, "precious"), []byte("p"), 0o644); err != nil {
			t.Fatal(err)
		}
		// Bound once to a claim that is gone: Released at once.
		pv := &api.PersistentVolume{ObjectMeta: api.ObjectMeta{Name: "users"},
			Spec: api.PersistentVolumeSpec{Capacity: api.ResourceList{api.ResourceStorage: "1Gi"}, AccessModes: []string{"ReadWriteOnce"},
				PersistentVolumeReclaimPolicy: api.ReclaimDelete, NodeAffinity: localpath.NodeAffinity(node),
				ClaimRef: &api.ObjectReference{Namespace: "default", Name: "gone", UID: "0d7c4c47-gone"},
				HostPath: &corev1.HostPathVolumeSource{Path: user}}}
		if _, err := c.PersistentVolumes().Create(ctx, pv); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, time.Minute, "the volume Failed", func() bool {
			return mustVolume(t, c, "users").Status.Phase == api.VolumeFailed
		})
		if msg := mustVolume(t, c, "users").Status.Message; !strings.Contains(msg, "host_path deleter") || !strings.Contains(msg, user) {
			t.Errorf("failed volume's message: %q", msg)
		}
		time.Sleep(2 * time.Second)
		if _, err := os.Stat(filepath.Join(user, "precious")); err != nil {
			t.Errorf("the user's data: %v", err)
		}
		mustKubectl(t, s, "Failed", "get", "pv", "users")
	})
}

// mustVolume is the volume name.
func mustVolume(t *testing.T, c *client.Client, name string) *api.PersistentVolume {
	t.Helper()
	pv, err := c.PersistentVolumes().Get(context.Background(), name)
	if err != nil {
		t.Fatalf("volume %s: %v", name, err)
	}
	return pv
}

// waitPodRunning waits for the pod of default to run.
func waitPodRunning(t *testing.T, c *client.Client, name string) *api.Pod {
	t.Helper()
	return waitPod(t, c, name, 2*time.Minute, "running", func(p *api.Pod) bool { return p.Status.Phase == api.PodRunning })
}
