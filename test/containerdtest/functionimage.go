package containerdtest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"minik8s/images"

	"minik8s/test/harness"
)

// ImportFunctionRuntime makes sure the function runtime image (the Python
// image with funcserver) is in this containerd, building it when needed.
func (c *Containerd) ImportFunctionRuntime(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	if _, err := exec.LookPath("debootstrap"); err != nil {
		if _, err := os.Stat(images.DefaultCacheDir); err != nil {
			harness.NeedE2E(t, "building %s needs debootstrap: %v", PythonRuntimeImage, err)
		}
	}
	b := images.Builder{CacheDir: images.DefaultCacheDir}
	path, err := b.Build(ctx, images.FunctionRuntime(harness.FuncserverBinary(t)))
	if err != nil {
		t.Fatalf("building the function runtime: %v", err)
	}
	if _, err := images.ImportFile(ctx, c.Runtime, path); err != nil {
		t.Fatalf("importing %s: %v", path, err)
	}
}
