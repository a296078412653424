package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	log "github.com/sirupsen/logrus"

	"minik8s/images"
	"minik8s/pkg/containerd"
)

// ensureImages builds and imports the runtime image when the node's
// containerd does not have it, and the example of a function in another
// language: it shares the runtime's root filesystem, so it costs a layer of
// a few kilobytes once the runtime is there.
func ensureImages(ctx context.Context, address string) error {
	rt, err := containerd.New(ctx, address, containerd.Options{})
	if err != nil {
		return err
	}
	defer rt.Close()
	if err := ensureRuntimeImage(ctx, rt); err != nil {
		return err
	}
	if err := ensureImage(ctx, rt, images.PerlExample()); err != nil {
		// Only an example: the cluster runs without it.
		log.WithError(err).WithField("image", images.PerlExampleName).Warn("example image not imported; 'make images' builds it")
	}
	return nil
}

func ensureRuntimeImage(ctx context.Context, rt *containerd.Runtime) error {
	if ok, err := rt.HasImage(ctx, images.PythonRuntimeName); err != nil || ok {
		return err
	}
	funcserver, err := siblingBinary("funcserver")
	if err != nil {
		return err
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		if err := aptInstall(ctx, "debootstrap"); err != nil {
			return err
		}
	}
	log.WithField("image", images.PythonRuntimeName).Info("building the function runtime image from Debian's packages (debootstrap; cached for next time, a few minutes the first time)")
	return ensureImage(ctx, rt, images.FunctionRuntime(funcserver))
}

// ensureImage builds spec (from the cache when it can) and imports it,
// unless the node has it.
func ensureImage(ctx context.Context, rt *containerd.Runtime, spec images.Spec) error {
	if ok, err := rt.HasImage(ctx, spec.Name); err != nil || ok {
		return err
	}
	b := images.Builder{CacheDir: images.DefaultCacheDir}
	path, err := b.Build(ctx, spec)
	if err != nil {
		return fmt.Errorf("building %s: %w", spec.Name, err)
	}
	if _, err := images.ImportFile(ctx, rt, path); err != nil {
		return fmt.Errorf("importing %s: %w", path, err)
	}
	log.WithField("image", spec.Name).Info("image imported")
	return nil
}

// siblingBinary finds another minik8s binary next to this one (bin/).
func siblingBinary(name string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	p := filepath.Join(filepath.Dir(self), name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s is not next to %s: build it first (make build): %w", name, self, err)
	}
	return p, nil
}
