package containerd_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"minik8s/pkg/containerd"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/netns"
	"minik8s/test/containerdtest"
)

// probe prints, as JSON, who the process is and how it is confined, as
// the kernel says it in /proc/self/status, and whether it may write its
// root filesystem and change a file's owner.
const probe = `import json, os
st = dict(l.rstrip("\n").split(":\t", 1) for l in open("/proc/self/status") if ":\t" in l)
def can(f):
    try:
        f(); return True
    except OSError:
        return False
def write():
    with open("/probe-file", "w") as f: f.write("x")
print(json.dumps({"uid": os.getuid(), "gid": os.getgid(), "groups": sorted(os.getgroups()),
    "capEff": st["CapEff"], "noNewPrivs": st["NoNewPrivs"], "seccomp": st["Seccomp"],
    "writeRoot": can(write), "chown": can(lambda: os.chown("/tmp", 1, 1)),
    "sysctl": open("/proc/sys/net/ipv4/ip_unprivileged_port_start").read().strip()}))`

type confinement struct {
	UID        int    `json:"uid"`
	GID        int    `json:"gid"`
	Groups     []int  `json:"groups"`
	CapEff     string `json:"capEff"`
	NoNewPrivs string `json:"noNewPrivs"`
	Seccomp    string `json:"seccomp"`
	WriteRoot  bool   `json:"writeRoot"`
	Chown      bool   `json:"chown"`
	Sysctl     string `json:"sysctl"`
}

// TestSecurity runs the probe in real containers under each confinement a
// Kubernetes security context asks, and reads what the kernel applied.
func TestSecurity(t *testing.T) {
	ctd := containerdtest.StartContainerd(t)
	ctd.ImportPythonRuntime(t)
	rt := ctd.Runtime
	ctx := context.Background()
	dir := t.TempDir()
	i64 := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name string
		sec  containerd.Security
		want confinement
	}{
		// The default: the image's root, containerd's 14 capabilities,
		// seccomp's default filter.
		{"default", containerd.Security{ImageGroups: true},
			confinement{UID: 0, GID: 0, Groups: []int{0}, CapEff: "00000000a80425fb", NoNewPrivs: "0", Seccomp: "2", WriteRoot: true, Chown: true, Sysctl: "1024"}},
		{"restricted", containerd.Security{UID: i64(1000), GID: i64(3000), SupplementalGroups: []int64{4000}, ImageGroups: true,
			CapDrop: []string{"ALL"}, NoNewPrivileges: true, ReadOnlyRootfs: true, Sysctls: map[string]string{"net.ipv4.ip_unprivileged_port_start": "80"}},
			confinement{UID: 1000, GID: 3000, Groups: []int{3000, 4000}, CapEff: "0000000000000000", NoNewPrivs: "1", Seccomp: "2", Sysctl: "80"}},
		// Root without CAP_CHOWN cannot give files away.
		{"root without chown", containerd.Security{CapDrop: []string{"chown"}},
			confinement{UID: 0, GID: 0, Groups: []int{0}, CapEff: "00000000a80425fa", NoNewPrivs: "0", Seccomp: "2", WriteRoot: true, Sysctl: "1024"}},
		{"unconfined with all capabilities", containerd.Security{Unconfined: true, CapAdd: []string{"ALL"}, ImageGroups: true},
			confinement{UID: 0, GID: 0, Groups: []int{0}, NoNewPrivs: "0", Seccomp: "0", WriteRoot: true, Chown: true, Sysctl: "1024"}},
		{"privileged", containerd.Security{Privileged: true, ImageGroups: true},
			confinement{UID: 0, GID: 0, Groups: []int{0}, NoNewPrivs: "0", Seccomp: "0", WriteRoot: true, Chown: true, Sysctl: "1024"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "security-" + strings.NewReplacer("_", "-").Replace(filepath.Base(t.Name()))
			netns := newNetNS(t) // sysctls are set in the container's own network
			logPath := filepath.Join(dir, id+".log")
			spec := containerd.ContainerSpec{ID: id, Image: containerdtest.PythonRuntimeImage, Command: []string{"python3", "-c", probe},
				LogPath: logPath, Security: tc.sec, NetNSPath: netns}
			if err := rt.CreateContainer(ctx, spec); err != nil {
				t.Fatal(err)
			}
			defer rt.RemoveContainer(ctx, id)
			if err := rt.StartContainer(ctx, id, logPath); err != nil {
				t.Fatal(err)
			}
			if st := waitExited(t, rt, id); st.ExitCode != 0 {
				out, _ := os.ReadFile(logPath)
				t.Fatalf("probe exited %d: %s", st.ExitCode, out)
			}
			_ = rt.ReapContainer(ctx, id)
			var got confinement
			out, _ := os.ReadFile(logPath)
			if err := json.Unmarshal(lastJSON(out), &got); err != nil {
				t.Fatalf("probe said %q: %v", out, err)
			}
			if tc.want.CapEff == "" { // all the kernel knows: not a fixed mask
				tc.want.CapEff = got.CapEff
				if got.CapEff <= "00000000a80425fb" {
					t.Errorf("ALL capabilities gave %s", got.CapEff)
				}
			}
			if gj, wj := mustJSON(got), mustJSON(tc.want); gj != wj {
				t.Errorf("confinement\n got %s\nwant %s", gj, wj)
			}
		})
	}

	// runAsNonRoot: the image runs as root, so the container is not made,
	// and the error says why; a non-root runAsUser passes.
	err := rt.CreateContainer(ctx, containerd.ContainerSpec{ID: "security-nonroot", Image: containerdtest.PythonRuntimeImage,
		Security: containerd.Security{RunAsNonRoot: true}})
	if !errdefs.IsInvalid(err) || !strings.Contains(err.Error(), "image will run as root") {
		t.Errorf("runAsNonRoot of a root image: %v", err)
	}
	if ok, _ := rt.SnapshotExists(ctx, "security-nonroot"); ok {
		t.Errorf("a refused container left its snapshot")
	}
	if err := rt.CreateContainer(ctx, containerd.ContainerSpec{ID: "security-nonroot-uid", Image: containerdtest.PythonRuntimeImage,
		Security: containerd.Security{RunAsNonRoot: true, UID: i64(1000)}}); err != nil {
		t.Errorf("runAsNonRoot with runAsUser 1000: %v", err)
	}
	_ = rt.RemoveContainer(ctx, "security-nonroot-uid")
}

func newNetNS(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "netns")
	if err := netns.New(path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = netns.Remove(path) })
	return path
}

// lastJSON is the last line of a log that is a JSON object (the runtime
// may prefix lines with a timestamp and stream).
func lastJSON(log []byte) []byte {
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	last := lines[len(lines)-1]
	if i := strings.Index(last, "{"); i >= 0 {
		return []byte(last[i:])
	}
	return []byte(last)
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
