package kubelet

import (
	"context"
	"fmt"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/kubelet/volume"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/localpath"
	"minik8s/pkg/workqueue"
)

// reclaimVolumes deletes this node's local-path volumes released under
// Delete (localpath.ToDelete): each one's directory, then the volume, as
// k3s's provisioner runs a helper pod on the volume's node (only this
// node touches its disk). It watches the volumes pinned here alone
// (api.FieldVolumeNode, all the node authorizer lets it list); every
// change and resync looks again, and a failed removal is retried.
func (k *Kubelet) reclaimVolumes(ctx context.Context) {
	f := cache.NewFactory(k.client, cache.WithResync(time.Minute),
		cache.WithListOptions(client.ListOptions{FieldSelector: api.FieldVolumeNode + "=" + k.cfg.NodeName}))
	inf := f.PersistentVolumes()
	volumes := inf.Lister()
	q := workqueue.New(workqueue.WithBackoff(time.Second, time.Minute))
	add := func(pv *api.PersistentVolume) {
		if _, ok := localpath.ToDelete(pv); ok {
			q.Add(pv.Name)
		}
	}
	inf.AddEventHandler(cache.Handler[*api.PersistentVolume]{OnAdd: add, OnUpdate: func(_, pv *api.PersistentVolume) { add(pv) }})
	f.Start(ctx)
	workqueue.Run(ctx, q, 1, "local-path deleter", func(ctx context.Context, name string) error {
		if pv, ok := volumes.Get("", name); ok {
			return k.deleteVolume(ctx, pv)
		}
		return nil
	})
}

// deleteVolume removes pv's directory, then pv; idempotent.
func (k *Kubelet) deleteVolume(ctx context.Context, pv *api.PersistentVolume) error {
	if node, ok := localpath.ToDelete(pv); !ok || node != k.cfg.NodeName {
		return nil
	}
	if r := pv.Spec.ClaimRef; r != nil && k.mountsClaim(r.Namespace, r.Name) {
		// A claim deleted under a running pod: its data goes once the
		// pod's containers are gone, not under them.
		return fmt.Errorf("persistentvolume %s: a pod of this node still mounts claim %s/%s", pv.Name, r.Namespace, r.Name)
	}
	dir := localpath.DirOf(pv)
	l := log.WithFields(log.Fields{"volume": pv.Name, "path": dir})
	if err := volume.RemoveClaimDir(k.cfg.StorageDir, dir); err != nil {
		if errdefs.IsInvalid(err) {
			// Refused for good: the volume stays Released, its path
			// untouched, until an admin sees to it.
			l.WithError(err).Warn("not deleting a released volume")
			return nil
		}
		return err
	}
	_, err := k.client.PersistentVolumes().Delete(ctx, pv.Name, client.DeleteOptions{UID: pv.UID, ResourceVersion: pv.ResourceVersion})
	if errdefs.IsNotFound(err) || errdefs.IsConflict(err) {
		// Gone already, or changed meanwhile: a change comes again.
		return nil
	}
	if err == nil {
		l.Info("deleted a released volume and its directory (reclaim policy Delete)")
	}
	return err
}

// mountsClaim tells whether a pod of this node whose containers are not
// all gone yet mounts claim ns/name.
func (k *Kubelet) mountsClaim(ns, name string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, w := range k.workers {
		p := w.Pod()
		if p == nil || p.Namespace != ns {
			continue
		}
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == name {
				return true
			}
		}
	}
	return false
}
