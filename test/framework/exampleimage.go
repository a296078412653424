package framework

import (
	"context"
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
	c.buildAndImport(ctx, t, PerlExampleImage, images.PerlExample())
}
