package containerd

import (
	"context"
	"fmt"
	"io"
	"sort"
	"time"

	containerd "github.com/containerd/containerd"
	"github.com/containerd/containerd/leases"
	"github.com/containerd/platforms"
)

// ImportImage imports an image archive (docker save or OCI layout tar)
// into the minik8s namespace and unpacks it for the snapshotter, so that a
// container can start from it at once. It returns the names imported.
func (r *Runtime) ImportImage(ctx context.Context, archiveReader io.Reader) ([]string, error) {
	ctx = nsCtx(ctx)
	// A lease keeps the imported content from the garbage collector until
	// the image records reference it.
	ctx, done, err := r.client.WithLease(ctx, leases.WithExpiration(time.Hour))
	if err != nil {
		return nil, wrap(err, "lease for import")
	}
	defer done(ctx)
	imgs, err := r.client.Import(ctx, archiveReader,
		containerd.WithImportPlatform(platforms.Default()))
	if err != nil {
		return nil, wrap(err, "importing image archive")
	}
	names := make([]string, 0, len(imgs))
	for _, i := range imgs {
		img := containerd.NewImage(r.client, i)
		if err := img.Unpack(ctx, Snapshotter); err != nil {
			return nil, wrap(err, "unpacking %s", i.Name)
		}
		names = append(names, i.Name)
	}
	return names, nil
}

// Image is an image in the minik8s namespace.
type Image struct {
	Name      string
	Digest    string
	Size      int64
	CreatedAt time.Time
}

// ListImages lists the images of the minik8s namespace by name.
func (r *Runtime) ListImages(ctx context.Context) ([]Image, error) {
	ctx = nsCtx(ctx)
	imgs, err := r.client.ListImages(ctx)
	if err != nil {
		return nil, wrap(err, "listing images")
	}
	out := make([]Image, 0, len(imgs))
	for _, img := range imgs {
		size, err := img.Size(ctx)
		if err != nil {
			size = -1
		}
		md := img.Metadata()
		out = append(out, Image{Name: img.Name(), Digest: img.Target().Digest.String(), Size: size, CreatedAt: md.CreatedAt})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// RemoveImage removes an image by name.
func (r *Runtime) RemoveImage(ctx context.Context, ref string) error {
	name, err := NormalizeRef(ref)
	if err != nil {
		return err
	}
	if err := r.client.ImageService().Delete(nsCtx(ctx), name); err != nil {
		return wrap(err, "removing image %s", name)
	}
	return nil
}

// ImageDigest is the digest of a named image, for container statuses.
func (r *Runtime) ImageDigest(ctx context.Context, ref string) (string, error) {
	name, err := NormalizeRef(ref)
	if err != nil {
		return "", err
	}
	img, err := r.client.GetImage(nsCtx(ctx), name)
	if err != nil {
		return "", wrap(err, "image %s", name)
	}
	return fmt.Sprintf("%s@%s", name, img.Target().Digest), nil
}
