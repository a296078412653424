// Package rollout holds what the workload controllers and the rollout
// commands agree on: the pod-template hash that names a Deployment's
// ReplicaSets, their revisions, the arithmetic of a rolling update, and
// the ControllerRevision history of DaemonSets and StatefulSets.
package rollout

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"strings"

	"minik8s/pkg/api"
)

// Defaults of a Deployment, as Kubernetes has them.
const (
	DefaultRevisionHistoryLimit    = 10
	DefaultProgressDeadlineSeconds = 600
	DefaultMaxSurge                = "25%"
	DefaultMaxUnavailable          = "25%"
)

// hashAlphabet spells hashes without vowels (no words) nor look-alikes,
// as Kubernetes' rand.SafeEncodeString does.
const hashAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// TemplateHash is the pod-template-hash of a template: the label that
// tells a Deployment's ReplicaSets apart and ends their names. The label
// itself is left out, so that a ReplicaSet's template hashes as the
// Deployment's it was made from.
func TemplateHash(t api.PodTemplateSpec) string {
	return hash(t, nil)
}

// Hash is the pod-template-hash of a Deployment's ReplicaSet for its
// current template: TemplateHash, salted by status.collisionCount once a
// ReplicaSet of that name was found holding another template, as
// Kubernetes' ComputeHash.
func Hash(d *api.Deployment) string {
	return hash(d.Spec.Template, d.Status.CollisionCount)
}

func hash(t api.PodTemplateSpec, collisionCount *int32) string {
	if _, ok := t.Labels[api.LabelPodTemplateHash]; ok {
		labels := make(map[string]string, len(t.Labels))
		for k, v := range t.Labels {
			if k != api.LabelPodTemplateHash {
				labels[k] = v
			}
		}
		t.Labels = labels
	}
	data, _ := json.Marshal(t)
	h := fnv.New32a()
	h.Write(data)
	if collisionCount != nil {
		h.Write([]byte(strconv.FormatInt(int64(*collisionCount), 10)))
	}
	n := h.Sum32()
	var b strings.Builder
	for i := 0; i < 10 && (i == 0 || n > 0); i++ {
		b.WriteByte(hashAlphabet[n%uint32(len(hashAlphabet))])
		n /= uint32(len(hashAlphabet))
	}
	return b.String()
}

// Revision is a ReplicaSet's revision (its revision annotation), 0 when
// it has none.
func Revision(rs *api.ReplicaSet) int64 {
	n, _ := strconv.ParseInt(rs.Annotations[api.AnnotationRevision], 10, 64)
	return n
}

// Scaled resolves a rolling update's bound against total: a number, or a
// percentage rounded up (surge) or down (unavailable).
func Scaled(v *api.IntOrString, def string, total int, roundUp bool) (int, error) {
	s := def
	if v != nil {
		s = string(*v)
	}
	if p, ok := strings.CutSuffix(s, "%"); ok {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q is not a percentage", s)
		}
		f := float64(n) * float64(total) / 100
		if roundUp {
			return int(math.Ceil(f)), nil
		}
		return int(math.Floor(f)), nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is neither a number nor a percentage", s)
	}
	return n, nil
}

// Bounds are a rolling update's surge and unavailable pods for desired
// replicas; both 0 would never make progress, so unavailable is then 1.
func Bounds(d *api.Deployment, desired int) (surge, unavailable int, err error) {
	var ru api.RollingUpdateDeployment
	if d.Spec.Strategy.RollingUpdate != nil {
		ru = *d.Spec.Strategy.RollingUpdate
	}
	if surge, err = Scaled(ru.MaxSurge, DefaultMaxSurge, desired, true); err != nil {
		return 0, 0, fmt.Errorf("maxSurge: %w", err)
	}
	if unavailable, err = Scaled(ru.MaxUnavailable, DefaultMaxUnavailable, desired, false); err != nil {
		return 0, 0, fmt.Errorf("maxUnavailable: %w", err)
	}
	if surge == 0 && unavailable == 0 {
		unavailable = 1
	}
	return surge, min(unavailable, desired), nil
}

// Replicas is a Deployment's desired count (default 1).
func Replicas(d *api.Deployment) int {
	if d.Spec.Replicas == nil {
		return 1
	}
	return int(*d.Spec.Replicas)
}
