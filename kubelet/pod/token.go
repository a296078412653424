package pod

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"minik8s/kubelet/volume"
	"minik8s/pkg/api"
	"minik8s/pkg/containerd"
)

// tokenRetry is the wait before asking again for a token whose refresh
// failed; the old token holds meanwhile (it has 20% of its life left).
const tokenRetry = 10 * time.Second

// prepareToken writes the pod's service account volume, unless the pod
// opts out, no container would mount it or none is left to run.
func (w *Worker) prepareToken(ctx context.Context, p *api.Pod) error {
	w.token = nil
	if !volume.AutomountToken(p) || !anyMountsToken(p) || !w.anyLeft() {
		return nil
	}
	tok, err := volume.ServiceAccountToken(ctx, p, w.dir, w.api)
	switch {
	case errors.Is(err, volume.ErrNoToken):
		w.log.WithError(err).Warn("running the pod without a service account token")
		return nil
	case err != nil:
		return err
	}
	w.token = tok
	return nil
}

// refreshToken renews the pod's token when 80% of its life has passed,
// while a container of the pod may still run.
func (w *Worker) refreshToken(ctx context.Context, p *api.Pod) {
	if w.token == nil || time.Now().Before(w.token.RefreshAt) || !w.anyLeft() {
		return
	}
	tok, err := volume.ServiceAccountToken(ctx, p, w.dir, w.api)
	if err != nil {
		if ctx.Err() == nil {
			w.log.WithError(err).Warn("refreshing the service account token; the old one stays meanwhile")
		}
		w.token.RefreshAt = time.Now().Add(tokenRetry)
		return
	}
	w.token = tok
	w.log.WithField("refreshAt", tok.RefreshAt.Format(time.RFC3339)).Debug("service account token refreshed")
}

// refreshVolumes writes again the volumes of the API's data that are due
// (a ConfigMap's or Secret's, the downward API's: every
// volume.RefreshPeriod; a projected token: at 80% of its life), while a
// container of the pod may still run; a failure keeps the old files and
// tries again shortly.
func (w *Worker) refreshVolumes(ctx context.Context, p *api.Pod) {
	if !w.anyLeft() {
		return
	}
	for i, v := range p.Spec.Volumes {
		vol, ok := w.volumes[v.Name]
		if !ok || vol.RefreshAt.IsZero() || time.Now().Before(vol.RefreshAt) {
			continue
		}
		next, err := volume.Refresh(ctx, p, w.dir, i, w.api, w.cfg.Allocatable)
		if err != nil {
			if ctx.Err() == nil {
				w.log.WithError(err).WithField("volume", v.Name).Warn("refreshing a volume; the old files stay meanwhile")
			}
			vol.RefreshAt = time.Now().Add(tokenRetry)
			w.volumes[v.Name] = vol
			continue
		}
		w.volumes[v.Name] = next
	}
}

// anyLeft tells whether a container of the pod runs or will run again.
func (w *Worker) anyLeft() bool {
	for _, c := range w.containers {
		if !c.done {
			return true
		}
	}
	return false
}

// tokenMount is the mount of the token volume into container c: none
// when there is no token or c mounts something of its own there.
func (w *Worker) tokenMount(c api.Container) []containerd.Mount {
	if w.token == nil || mountsAtToken(c) {
		return nil
	}
	return []containerd.Mount{{Source: w.token.Dir, Destination: volume.ServiceAccountMountPath, ReadOnly: true}}
}

func mountsAtToken(c api.Container) bool {
	for _, m := range c.VolumeMounts {
		if filepath.Clean(m.MountPath) == volume.ServiceAccountMountPath {
			return true
		}
	}
	return false
}

func anyMountsToken(p *api.Pod) bool {
	for _, c := range podContainers(p) {
		if !mountsAtToken(c) {
			return true
		}
	}
	return false
}
