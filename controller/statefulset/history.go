package statefulset

import (
	"context"

	"minik8s/pkg/api"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/rollout"
)

// history is set's ControllerRevisions (rollout.History); its pods name
// their revision by its name.
func (sc *Controller) history(set *api.StatefulSet) *rollout.History {
	return &rollout.History{Owner: set, Kind: api.StatefulSetsResource, Template: set.Spec.Template,
		CollisionCount: set.Status.CollisionCount, Limit: set.Spec.RevisionHistoryLimit,
		PodKey: rollout.ByName, Client: sc.api,
		SetCollisionCount: func(ctx context.Context, n int32) error {
			up := cache.DeepCopy(set)
			up.Status.CollisionCount = &n
			_, err := sc.api.UpdateStatefulSetStatus(ctx, up)
			return err
		}}
}
