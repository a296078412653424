package images

import (
	"context"
	"fmt"
	"os"

	"minik8s/pkg/containerd"
)

// ImportFile imports an image archive into a node's containerd and returns
// the names it holds.
func ImportFile(ctx context.Context, rt *containerd.Runtime, path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("image archive: %w", err)
	}
	defer f.Close()
	return rt.ImportImage(ctx, f)
}
