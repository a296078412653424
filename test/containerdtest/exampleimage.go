package containerdtest

import (
	"context"
	"testing"
	"time"

	"minik8s/images"

	"minik8s/test/harness"
)

// PerlExampleImage is the example function in another language.
const PerlExampleImage = images.PerlExampleName

// ImportPerlExample makes sure the Perl example function's image is in this
// containerd, building it when needed (from the Python runtime's cached
// root filesystem, so it costs a layer of a few kilobytes).
func (c *Containerd) ImportPerlExample(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	c.buildAndImport(ctx, t, PerlExampleImage, images.PerlExample())
}

// InClusterClientImage runs test/incluster, a client-go program that acts
// with its pod's service account (rest.InClusterConfig).
const InClusterClientImage = "minik8s/incluster-client:latest"

// ImportInClusterClient makes sure the in-cluster client's image is in
// this containerd: the static program in a layer of its own over the
// Python runtime's cached root filesystem, as the Perl example is built.
func (c *Containerd) ImportInClusterClient(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	const path = "/usr/local/bin/incluster"
	c.buildAndImport(ctx, t, InClusterClientImage, images.Spec{Name: InClusterClientImage, Rootfs: images.PythonRuntime().Rootfs,
		Files: []images.File{{Source: harness.GoProgram(t, "./test/incluster"), Path: path, Mode: 0o755}}, Entrypoint: []string{path}})
}
