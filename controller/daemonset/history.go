package daemonset

import (
	"context"

	"minik8s/pkg/api"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/rollout"
)

// history is ds's ControllerRevisions (rollout.History); its pods name
// their revision by its hash.
func (dc *Controller) history(ds *api.DaemonSet) *rollout.History {
	return &rollout.History{Owner: ds, Kind: api.DaemonSetsResource, Template: ds.Spec.Template,
		CollisionCount: ds.Status.CollisionCount, Limit: ds.Spec.RevisionHistoryLimit,
		PodKey: rollout.ByHash, Client: dc.api,
		SetCollisionCount: func(ctx context.Context, n int32) error {
			up := cache.DeepCopy(ds)
			up.Status.CollisionCount = &n
			_, err := dc.api.UpdateDaemonSetStatus(ctx, up)
			return err
		}}
}
