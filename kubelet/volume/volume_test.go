package volume

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// fakeConfigMaps holds ConfigMaps and Secrets by namespace/name.
type fakeConfigMaps map[string]*api.ConfigMap

type fakeSecrets map[string]*api.Secret

type fakeGetter struct {
	fakeConfigMaps
	fakeSecrets
}

func (f fakeConfigMaps) GetConfigMap(_ context.Context, ns, name string) (*api.ConfigMap, error) {
	if cm, ok := f[ns+"/"+name]; ok {
		return cm, nil
	}
	return nil, errdefs.ErrNotFound
}

func (f fakeSecrets) GetSecret(_ context.Context, ns, name string) (*api.Secret, error) {
	if s, ok := f[ns+"/"+name]; ok {
		return s, nil
	}
	return nil, errdefs.ErrNotFound
}

// tokens are made by fakeGetter: "token-for-SA-AUDIENCES", good for the
// time asked.
func (fakeGetter) CreateToken(_ context.Context, ns, sa string, req *api.TokenRequest) (*api.TokenRequest, error) {
	out := *req
	out.Status.Token = "token-for-" + sa + "-" + strings.Join(req.Spec.Audiences, ",")
	out.Status.ExpirationTimestamp = time.Now().Add(time.Duration(*req.Spec.ExpirationSeconds) * time.Second)
	return &out, nil
}

func TestPrepare(t *testing.T) {
	podDir := t.TempDir()
	host := filepath.Join(t.TempDir(), "host", "dir")
	cms := fakeConfigMaps{"ns/code": {Data: map[string]string{"main.py": "print(1)"}, BinaryData: map[string][]byte{"blob": {0, 1}}}}
	pod := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: api.PodSpec{Volumes: []api.Volume{
		{Name: "scratch", EmptyDir: &api.EmptyDirVolumeSource{}},
		{Name: "host", HostPath: &api.HostPathVolumeSource{Path: host}},
		{Name: "code", ConfigMap: &api.ConfigMapVolumeSource{Name: "code"}},
	}}}
	vols, err := Prepare(context.Background(), pod, podDir, fakeGetter{cms, nil}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(vols["scratch"].HostPath); err != nil || !st.IsDir() || vols["scratch"].ReadOnly {
		t.Errorf("emptyDir: %+v, %v", vols["scratch"], err)
	}
	if vols["host"].HostPath != host {
		t.Errorf("hostPath = %q", vols["host"].HostPath)
	}
	if _, err := os.Stat(host); err != nil {
		t.Errorf("hostPath dir not made: %v", err)
	}
	if !vols["code"].ReadOnly {
		t.Errorf("configMap volume not read-only")
	}
	if data, _ := os.ReadFile(filepath.Join(vols["code"].HostPath, "main.py")); string(data) != "print(1)" {
		t.Errorf("main.py = %q", data)
	}
	// New content reaches the next preparation.
	cms["ns/code"] = &api.ConfigMap{Data: map[string]string{"main.py": "print(2)"}}
	vols, err = Prepare(context.Background(), pod, podDir, fakeGetter{cms, nil}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(vols["code"].HostPath, "main.py")); string(data) != "print(2)" {
		t.Errorf("main.py after update = %q", data)
	}
	if _, err := os.Stat(filepath.Join(vols["code"].HostPath, "blob")); err == nil {
		t.Errorf("a removed key is still there")
	}
}

func TestPrepareErrors(t *testing.T) {
	tests := []struct {
		name  string
		vol   api.Volume
		check func(error) bool
	}{
		{"missing configmap", api.Volume{Name: "c", ConfigMap: &api.ConfigMapVolumeSource{Name: "nope"}}, errdefs.IsNotFound},
		{"missing secret", api.Volume{Name: "s", Secret: &api.SecretVolumeSource{SecretName: "nope"}}, errdefs.IsNotFound},
		{"missing secret, optional false", api.Volume{Name: "s", Secret: &api.SecretVolumeSource{SecretName: "nope", Optional: ptr(false)}}, errdefs.IsNotFound},
		{"secret mode too wide", api.Volume{Name: "s", Secret: &api.SecretVolumeSource{SecretName: "nope", DefaultMode: ptr(int32(0o1777))}}, errdefs.IsInvalid},
		{"secret without a name", api.Volume{Name: "s", Secret: &api.SecretVolumeSource{}}, errdefs.IsInvalid},
		{"relative hostPath", api.Volume{Name: "h", HostPath: &api.HostPathVolumeSource{Path: "rel"}}, errdefs.IsInvalid},
		{"no source", api.Volume{Name: "x"}, errdefs.IsInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: api.PodSpec{Volumes: []api.Volume{tt.vol}}}
			_, err := Prepare(context.Background(), pod, t.TempDir(), fakeGetter{fakeConfigMaps{}, fakeSecrets{}}, nil)
			if !tt.check(err) {
				t.Errorf("err = %v", err)
			}
		})
	}
}

// TestFSGroup: with a pod's fsGroup, its volumes but hostPaths belong to
// the group, which may write where the volume is writable, and what is
// made in their directories later belongs to the group too.
func TestFSGroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing a file's group to any group needs root")
	}
	podDir := t.TempDir()
	host := t.TempDir()
	cms := fakeConfigMaps{"ns/code": {Data: map[string]string{"main.py": "print(1)"}}}
	gid := int64(4321)
	pod := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: api.PodSpec{
		SecurityContext: &corev1.PodSecurityContext{FSGroup: &gid},
		Volumes: []api.Volume{
			{Name: "scratch", EmptyDir: &api.EmptyDirVolumeSource{}},
			{Name: "host", HostPath: &api.HostPathVolumeSource{Path: host}},
			{Name: "code", ConfigMap: &api.ConfigMapVolumeSource{Name: "code"}},
		}}}
	vols, err := Prepare(context.Background(), pod, podDir, fakeGetter{cms, nil}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path     string
		gid      int
		setgid   bool
		modeBits os.FileMode
	}{
		{vols["scratch"].HostPath, int(gid), true, 0o770},
		{filepath.Join(vols["code"].HostPath, "main.py"), int(gid), false, 0o440},
		{host, 0, false, 0},
	} {
		st, err := os.Stat(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		sys := st.Sys().(*syscall.Stat_t)
		if int(sys.Gid) != tc.gid || (st.Mode()&os.ModeSetgid != 0) != tc.setgid || st.Mode().Perm()&tc.modeBits != tc.modeBits {
			t.Errorf("%s: group %d, mode %v; want group %d, setgid %v, bits %o", tc.path, sys.Gid, st.Mode(), tc.gid, tc.setgid, tc.modeBits)
		}
	}
}

// TestDownwardAPIVolume: the pod's fields and a container's resources, as
// files with their modes; a nested path is files in directories, and a
// path out of the volume is refused naming the item.
func TestDownwardAPIVolume(t *testing.T) {
	mode := int32(0o600)
	pod := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "p", Namespace: "ns", UID: "u-1", Labels: map[string]string{"app": "web", "tier": "front"}},
		Spec: api.PodSpec{Containers: []api.Container{{Name: "c", Resources: api.ResourceRequirements{Limits: api.ResourceList{"memory": "64Mi"}}}},
			Volumes: []api.Volume{{Name: "info", DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}},
				{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}, Mode: &mode},
				{Path: "mem", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "c", Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}},
				{Path: "cpu", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "c", Resource: "limits.cpu"}},
			}}}}}}
	vols, err := Prepare(context.Background(), pod, t.TempDir(), fakeGetter{}, api.ResourceList{"cpu": "3"})
	if err != nil {
		t.Fatal(err)
	}
	dir := vols["info"].HostPath
	for name, want := range map[string]string{"name": "p", "labels": "app=\"web\"\ntier=\"front\"", "mem": "64", "cpu": "3"} {
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", name, got, err, want)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "labels")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("labels' mode: %v, %v", st.Mode(), err)
	}
	if st, err := os.Stat(filepath.Join(dir, "name")); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("name's mode: %v, %v", st.Mode(), err)
	}
	pod.Spec.Volumes[0].DownwardAPI.Items[0].Path = "sub/name"
	vols, err = Prepare(context.Background(), pod, t.TempDir(), fakeGetter{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(vols["info"].HostPath, "sub", "name")); err != nil || string(got) != "p" {
		t.Errorf("a nested path: %q, %v", got, err)
	}
	pod.Spec.Volumes[0].DownwardAPI.Items[0].Path = "../name"
	if _, err := Prepare(context.Background(), pod, t.TempDir(), fakeGetter{}, nil); !errdefs.IsInvalid(err) ||
		!strings.Contains(err.Error(), "spec.volumes[0].downwardAPI.items[0].path") {
		t.Errorf("a path out of the volume: %v", err)
	}
}

// TestMemoryEmptyDir: medium Memory is a tmpfs of sizeLimit, mounted once
// however often the pod is prepared, and gone with the pod's dir.
func TestMemoryEmptyDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	podDir := filepath.Join(t.TempDir(), "pod")
	limit := resource.MustParse("1Mi")
	pod := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: api.PodSpec{Volumes: []api.Volume{
		{Name: "mem", EmptyDir: &api.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &limit}}}}}
	for range 2 {
		if _, err := Prepare(context.Background(), pod, podDir, fakeGetter{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(Dir(podDir), "empty-dir", "mem")
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	const tmpfsMagic = 0x01021994
	if fs.Type != tmpfsMagic || fs.Blocks*uint64(fs.Bsize) != 1<<20 {
		t.Errorf("memory emptyDir: filesystem %#x of %d bytes, want a tmpfs of 1Mi", fs.Type, fs.Blocks*uint64(fs.Bsize))
	}
	if out, _ := os.ReadFile("/proc/self/mountinfo"); strings.Count(string(out), dir+" ") != 1 {
		t.Errorf("%s is mounted %d times, want once", dir, strings.Count(string(out), dir+" "))
	}
	if err := os.WriteFile(filepath.Join(dir, "big"), make([]byte, 2<<20), 0o644); err == nil {
		t.Errorf("wrote 2Mi into a 1Mi memory volume")
	}
	if err := RemovePodDir(podDir); err != nil {
		t.Fatal(err)
	}
	if out, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(out), dir) {
		t.Errorf("%s still mounted after RemovePodDir", dir)
	}
	if _, err := os.Stat(podDir); !os.IsNotExist(err) {
		t.Errorf("pod dir left: %v", err)
	}
}

// TestRefreshFollowsTheAPI: written again, a ConfigMap volume holds the
// ConfigMap's new data and a downwardAPI volume the pod's new labels;
// with nothing new, the files (and their data dir) stay as they were.
func TestRefreshFollowsTheAPI(t *testing.T) {
	cms := fakeConfigMaps{"ns/cfg": {Data: map[string]string{"color": "blue"}}}
	pod := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"tier": "web"}},
		Spec: api.PodSpec{Volumes: []api.Volume{
			{Name: "cfg", ConfigMap: &api.ConfigMapVolumeSource{Name: "cfg"}},
			{Name: "info", DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}},
		}}}
	podDir := t.TempDir()
	src := fakeGetter{cms, fakeSecrets{}}
	vols, err := Prepare(context.Background(), pod, podDir, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	read := func(vol, name string) string {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(vols[vol].HostPath, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	for _, v := range vols {
		if d := time.Until(v.RefreshAt); d <= 0 || d > RefreshPeriod {
			t.Errorf("%s is written again in %v, want within %v", v.HostPath, d, RefreshPeriod)
		}
	}
	before, _ := os.Readlink(filepath.Join(vols["cfg"].HostPath, dataLink))
	if _, err := Refresh(context.Background(), pod, podDir, 0, src, nil); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.Readlink(filepath.Join(vols["cfg"].HostPath, dataLink)); after != before {
		t.Errorf("an unchanged ConfigMap was written again (%s, then %s)", before, after)
	}

	cms["ns/cfg"] = &api.ConfigMap{Data: map[string]string{"color": "green"}}
	pod.Labels["tier"] = "api"
	for i := range pod.Spec.Volumes {
		if _, err := Refresh(context.Background(), pod, podDir, i, src, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := read("cfg", "color"); got != "green" {
		t.Errorf("the ConfigMap volume holds %q after a change, want green", got)
	}
	if got := read("info", "labels"); got != `tier="api"` {
		t.Errorf("the downwardAPI volume holds %q after a label change, want tier=\"api\"", got)
	}
}
