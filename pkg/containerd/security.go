package containerd

import (
	"context"
	"strconv"
	"strings"

	"github.com/containerd/containerd/containers"
	"github.com/containerd/containerd/contrib/seccomp"
	"github.com/containerd/containerd/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"minik8s/pkg/errdefs"
)

// Security is how a container is confined, as containerd's CRI plugin
// builds it from a Kubernetes security context: who the process is, what
// it may do, what it may write.
type Security struct {
	// UID and GID run the process as these ids; nil UID is the image's
	// user, nil GID the user's group in the image's /etc/passwd.
	UID, GID *int64
	// SupplementalGroups are added to the process's groups, and with
	// ImageGroups the user's groups in the image's /etc/group too
	// (Kubernetes' supplementalGroupsPolicy Merge; Strict leaves them).
	SupplementalGroups []int64
	ImageGroups        bool
	// Privileged: all capabilities and devices, no seccomp, /proc and
	// /sys unmasked and writable.
	Privileged bool
	// CapAdd and CapDrop change the default set (containerd's, the CRI
	// plugin's: 14 capabilities), by Kubernetes' names ("NET_ADMIN") or
	// "ALL"; ALL is applied before single names, as CRI does.
	CapAdd, CapDrop []string
	NoNewPrivileges bool
	ReadOnlyRootfs  bool
	// Unconfined runs without the runtime's default seccomp profile.
	Unconfined bool
	// Sysctls are set in the container's namespaces.
	Sysctls map[string]string
	// RunAsNonRoot refuses to create the container if its process would
	// run as root, or as a user named in the image whose id cannot be
	// known before it runs (Kubernetes' kubelet rule).
	RunAsNonRoot bool
}

// checkNonRoot applies RunAsNonRoot against the image's USER.
func (s Security) checkNonRoot(imageUser string) error {
	if !s.RunAsNonRoot {
		return nil
	}
	if s.UID != nil {
		if *s.UID == 0 {
			return errdefs.Invalid("securityContext.runAsUser", "container's runAsUser breaks non-root policy: it is 0 and runAsNonRoot is set")
		}
		return nil
	}
	name, _, _ := strings.Cut(imageUser, ":")
	uid, err := strconv.ParseInt(name, 10, 64)
	switch {
	case name == "" || (err == nil && uid == 0):
		return errdefs.Invalid("securityContext.runAsNonRoot", "container has runAsNonRoot and image will run as root: "+
			"set runAsUser to a non-zero id, or use an image whose USER is not root")
	case err != nil:
		return errdefs.Invalid("securityContext.runAsNonRoot", "container has runAsNonRoot and image has non-numeric user (%s), "+
			"cannot verify user is non-root: set runAsUser", name)
	}
	return nil
}

// opts are the OCI spec options for s, applied after the image's config
// (which set the image's user and its groups); user is the image's USER.
func (s Security) opts(user string) []oci.SpecOpts {
	var opts []oci.SpecOpts
	var override string
	if s.UID != nil || s.GID != nil {
		override, _, _ = strings.Cut(user, ":")
		if override == "" {
			override = "0"
		}
		if s.UID != nil {
			override = strconv.FormatInt(*s.UID, 10)
		}
		userstr := override
		if s.GID != nil {
			userstr += ":" + strconv.FormatInt(*s.GID, 10)
		}
		opts = append(opts, oci.WithUser(userstr))
	}
	switch {
	case !s.ImageGroups:
		opts = append(opts, withoutImageGroups)
	case override != "":
		// The user's groups in the image's /etc/group, as the image's own
		// user got them from the image's config.
		opts = append(opts, oci.WithAdditionalGIDs(override))
	}
	opts = append(opts, withGroups(s.SupplementalGroups), capabilities(s.CapAdd, s.CapDrop))
	if s.Privileged {
		opts = append(opts, oci.WithPrivileged, oci.WithHostDevices, oci.WithAllDevicesAllowed)
	} else if !s.Unconfined {
		opts = append(opts, seccomp.WithDefaultProfile(), nativeABIOnly)
	} else {
		opts = append(opts, oci.WithSeccompUnconfined)
	}
	// containerd's default spec sets no_new_privs; Kubernetes' default
	// (allowPrivilegeEscalation unset) is without it, as CRI makes it.
	opts = append(opts, withoutAmbientCaps, oci.WithNewPrivileges)
	if s.NoNewPrivileges {
		opts = append(opts, oci.WithNoNewPrivileges)
	}
	if s.ReadOnlyRootfs {
		opts = append(opts, oci.WithRootFSReadonly())
	}
	if len(s.Sysctls) > 0 {
		opts = append(opts, withSysctls(s.Sysctls))
	}
	return opts
}

// nativeABIOnly compiles the seccomp profile for the machine's own system
// call ABI only (x86_64 on amd64), not the others containerd lists with
// it (i386 and x32 there): compiling those as well made runc's container
// start about 20 ms, a quarter, slower (BenchmarkPodStartSecurityContext),
// and a filter without them is stricter, not looser: libseccomp sends a
// call through an ABI the filter does not name to the bad-architecture
// action, which kills the process. The cost: 32-bit programs do not run
// under the default profile (Unconfined runs them).
func nativeABIOnly(_ context.Context, _ oci.Client, _ *containers.Container, s *specs.Spec) error {
	if s.Linux != nil && s.Linux.Seccomp != nil {
		s.Linux.Seccomp.Architectures = nil
	}
	return nil
}

// capabilities adds and drops capabilities as containerd's CRI plugin
// does: ALL first, then single names.
func capabilities(add, drop []string) oci.SpecOpts {
	var opts []oci.SpecOpts
	has := func(l []string, s string) bool {
		for _, c := range l {
			if strings.EqualFold(c, s) {
				return true
			}
		}
		return false
	}
	if has(add, "ALL") {
		opts = append(opts, oci.WithAllCurrentCapabilities) // CRI: the runtime's own, which the kernel has
	}
	if has(drop, "ALL") {
		opts = append(opts, oci.WithCapabilities(nil))
	}
	named := func(l []string) []string {
		var out []string
		for _, c := range l {
			if !strings.EqualFold(c, "ALL") {
				out = append(out, "CAP_"+strings.ToUpper(strings.TrimPrefix(strings.ToUpper(c), "CAP_")))
			}
		}
		return out
	}
	opts = append(opts, oci.WithAddedCapabilities(named(add)), oci.WithDroppedCapabilities(named(drop)))
	return oci.Compose(opts...)
}

// withoutImageGroups leaves the process only its primary group (and the
// supplemental groups added after).
func withoutImageGroups(_ context.Context, _ oci.Client, _ *containers.Container, s *specs.Spec) error {
	s.Process.User.AdditionalGids = []uint32{s.Process.User.GID}
	return nil
}

func withGroups(groups []int64) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *specs.Spec) error {
		ids := make([]uint32, 0, len(groups))
		for _, g := range groups {
			ids = append(ids, uint32(g))
		}
		s.Process.User.AdditionalGids = mergeIDs(s.Process.User.AdditionalGids, ids)
		return nil
	}
}

func mergeIDs(a, b []uint32) []uint32 {
	out := append([]uint32(nil), a...)
	for _, id := range b {
		found := false
		for _, x := range out {
			found = found || x == id
		}
		if !found {
			out = append(out, id)
		}
	}
	return out
}

// withoutAmbientCaps: a non-root user with added capabilities does not
// get them as ambient ones (Kubernetes leaves this undefined; CRI keeps
// Docker's behaviour).
func withoutAmbientCaps(_ context.Context, _ oci.Client, _ *containers.Container, s *specs.Spec) error {
	if s.Process != nil && s.Process.Capabilities != nil {
		s.Process.Capabilities.Ambient = nil
	}
	return nil
}

func withSysctls(sysctls map[string]string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *specs.Spec) error {
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}
		if s.Linux.Sysctl == nil {
			s.Linux.Sysctl = map[string]string{}
		}
		for k, v := range sysctls {
			s.Linux.Sysctl[k] = v
		}
		return nil
	}
}
