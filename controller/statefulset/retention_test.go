package statefulset

import (
	"context"
	"slices"
	"strings"
	"testing"

	"minik8s/pkg/api"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/client/cache/cachetest"
	"minik8s/pkg/errdefs"
)

func policy(whenDeleted, whenScaled string) func(*api.StatefulSet) {
	return func(s *api.StatefulSet) {
		s.Spec.PersistentVolumeClaimRetentionPolicy = &api.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: whenDeleted, WhenScaled: whenScaled}
	}
}

// TestClaimOwners: the owners of a pod's claim per retention policy, as
// Kubernetes' updateClaimOwnerRefForSetAndPod gives them.
func TestClaimOwners(t *testing.T) {
	const (
		retain = api.RetainPersistentVolumeClaimRetentionPolicy
		del    = api.DeletePersistentVolumeClaimRetentionPolicy
	)
	p := pod("web-1", "r", ready)
	setUID, podUID := "set-uid", p.UID
	other := api.OwnerReference{Kind: "ConfigMap", Name: "keep", UID: "cm"}
	for _, tc := range []struct {
		name       string
		policy     func(*api.StatefulSet)
		inRange    bool
		owners     []api.OwnerReference
		want       []string // owner uids
		wantChange bool
	}{
		{"retain by default", nil, true, nil, nil, false},
		{"retain drops the set and pod", policy(retain, retain), false,
			[]api.OwnerReference{setRef(set(1)), podRef(p), other}, []string{"cm"}, true},
		{"whenDeleted: the set", policy(del, retain), true, nil, []string{setUID}, true},
		{"whenDeleted, already the set's", policy(del, retain), true, []api.OwnerReference{setRef(set(1))}, []string{setUID}, false},
		{"whenDeleted scaled away: still the set's", policy(del, retain), false, []api.OwnerReference{podRef(p)}, []string{setUID}, true},
		{"whenScaled in range: no one's", policy(retain, del), true, []api.OwnerReference{podRef(p)}, nil, true},
		{"whenScaled scaled away: the pod's", policy(retain, del), false, nil, []string{podUID}, true},
		{"both in range: the set's", policy(del, del), true, []api.OwnerReference{podRef(p)}, []string{setUID}, true},
		{"both scaled away: the pod's alone", policy(del, del), false, []api.OwnerReference{setRef(set(1))}, []string{podUID}, true},
		{"an earlier pod of the name is dropped", policy(retain, del), false,
			[]api.OwnerReference{{Kind: "Pod", Name: "web-1", UID: "gone"}}, []string{podUID}, true},
		{"an earlier set of the name is dropped", policy(del, retain), true,
			[]api.OwnerReference{{Kind: "StatefulSet", Name: "web", UID: "gone"}, other}, []string{"cm", setUID}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts []func(*api.StatefulSet)
			if tc.policy != nil {
				opts = append(opts, tc.policy)
			}
			s := set(2, opts...)
			claim := &api.PersistentVolumeClaim{ObjectMeta: api.ObjectMeta{Name: "www-web-1", OwnerReferences: tc.owners}}
			refs, changed := claimOwners(claim, s, p, tc.inRange)
			if changed != tc.wantChange {
				t.Fatalf("changed %v, want %v", changed, tc.wantChange)
			}
			if !changed {
				refs = claim.OwnerReferences
			}
			var got []string
			for _, r := range refs {
				got = append(got, r.UID)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("owners %v, want %v", got, tc.want)
			}
			for _, r := range refs {
				if r.Controller != nil || (r.Kind == "Pod" && r.APIVersion != "v1") || (r.Kind == "StatefulSet" && r.APIVersion != "apps/v1") {
					t.Errorf("owner %+v: want a plain reference, as Kubernetes sets", r)
				}
			}
		})
	}
}

// fakeAPI records what the controller writes, in order.
type fakeAPI struct {
	API
	calls     []string
	updateErr error
}

func (f *fakeAPI) UpdateClaim(_ context.Context, c *api.PersistentVolumeClaim) (*api.PersistentVolumeClaim, error) {
	var uids []string
	for _, r := range c.OwnerReferences {
		uids = append(uids, r.UID)
	}
	f.calls = append(f.calls, "update "+c.Name+" owners "+strings.Join(uids, ","))
	return c, f.updateErr
}

func (f *fakeAPI) DeletePod(_ context.Context, _, name, _ string) error {
	f.calls = append(f.calls, "delete "+name)
	return nil
}

// TestScaledAwayClaimIsThePodsBeforeThePodGoes: under whenScaled Delete,
// the claim of a pod scaled away becomes the pod's before the pod is
// deleted (the collector deletes it once the pod is gone); a failed
// update keeps the pod.
func TestScaledAwayClaimIsThePodsBeforeThePodGoes(t *testing.T) {
	s := set(1, policy(api.RetainPersistentVolumeClaimRetentionPolicy, api.DeletePersistentVolumeClaimRetentionPolicy))
	s.Spec.VolumeClaimTemplates = []api.PersistentVolumeClaim{{ObjectMeta: api.ObjectMeta{Name: "www"}}}
	pods := []*api.Pod{pod("web-0", "r", ready), pod("web-1", "r", ready)}
	claims := []*api.PersistentVolumeClaim{
		{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "www-web-0"}},
		{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "www-web-1"}},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inf := cache.NewInformer[api.PersistentVolumeClaim](cachetest.NewLW(claims...))
	inf.Start(ctx)
	cache.WaitForSync(ctx, inf)

	for _, tc := range []struct {
		name      string
		updateErr error
		want      []string
	}{
		{"claim first, then the pod", nil, []string{"update www-web-1 owners uid-web-1", "delete web-1"}},
		{"a failed update keeps the pod", errdefs.ErrConflict, []string{"update www-web-1 owners uid-web-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fa := &fakeAPI{updateErr: tc.updateErr}
			sc := &Controller{api: fa, claims: inf.Lister()}
			v := newView(s, "r", "r", pods, now)
			pl := v.manage()
			err := sc.retainClaims(ctx, s, v)
			if err == nil {
				err = sc.act(ctx, s, v, s.Spec.Template, pl)
			}
			if (err != nil) != (tc.updateErr != nil) {
				t.Fatalf("error %v", err)
			}
			if !slices.Equal(fa.calls, tc.want) {
				t.Fatalf("calls %q\nwant  %q", fa.calls, tc.want)
			}
		})
	}
}
