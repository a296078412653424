package framework

import (
	"context"
	"errors"
	"testing"
	"time"

	"minik8s/images"
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
	b := images.Builder{CacheDir: images.DefaultCacheDir}
	path, err := b.Build(ctx, images.PerlExample())
	if errors.Is(err, images.ErrNoDebootstrap) {
		NeedE2E(t, "building %s: %v", PerlExampleImage, err)
	}
	if err != nil {
		t.Fatalf("building %s: %v", PerlExampleImage, err)
	}
	if _, err := images.ImportFile(ctx, c.Runtime, path); err != nil {
		t.Fatalf("importing %s: %v", path, err)
	}
}
