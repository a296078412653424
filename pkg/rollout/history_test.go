package rollout

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/owner"
)

// fakeRevisions records what a History writes; there is what Get finds
// after a Create refused as already existing.
type fakeRevisions struct {
	there            *api.ControllerRevision
	created, updated []*api.ControllerRevision
	deleted          []string
}

func (f *fakeRevisions) CreateRevision(_ context.Context, r *api.ControllerRevision) (*api.ControllerRevision, error) {
	if f.there != nil {
		return nil, fmt.Errorf("%w: %s", errdefs.ErrAlreadyExists, r.Name)
	}
	f.created = append(f.created, r)
	return r, nil
}

func (f *fakeRevisions) GetRevision(context.Context, string, string) (*api.ControllerRevision, error) {
	return f.there, nil
}

func (f *fakeRevisions) UpdateRevision(_ context.Context, r *api.ControllerRevision) (*api.ControllerRevision, error) {
	f.updated = append(f.updated, r)
	return r, nil
}

func (f *fakeRevisions) DeleteRevision(_ context.Context, _, name, _ string) error {
	f.deleted = append(f.deleted, name)
	return nil
}

func template(image string) api.PodTemplateSpec {
	return api.PodTemplateSpec{ObjectMeta: api.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: api.PodSpec{Containers: []api.Container{{Name: "c", Image: image}}}}
}

func newHistory(image string, key RevisionKey, limit *int32) (*History, *fakeRevisions, *int32) {
	f := &fakeRevisions{}
	var bumped int32
	ds := &api.DaemonSet{ObjectMeta: api.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1"}}
	return &History{Owner: ds, Kind: api.DaemonSetsResource, Template: template(image), Limit: limit, PodKey: key,
		Client: f, SetCollisionCount: func(_ context.Context, n int32) error { bumped = n; return nil }}, f, &bumped
}

// revision is one the history's owner controls, recording image.
func revision(h *History, image string, n int64) *api.ControllerRevision {
	o := *h
	o.Template = template(image)
	data, _ := patch(o.Template)
	hash := o.Hash()
	return &api.ControllerRevision{ObjectMeta: api.ObjectMeta{Name: RevisionName("web", hash), Namespace: "ns",
		Labels:          map[string]string{api.LabelControllerRevisionHash: hash},
		OwnerReferences: []api.OwnerReference{owner.ControllerRef(api.DaemonSetsResource, h.Owner)}},
		Data: data, Revision: n}
}

func TestHistoryCurrent(t *testing.T) {
	for _, tc := range []struct {
		name        string
		revs        []string // images of the existing revisions, numbered 1, 2, …
		there       string   // image of a revision of the same name not in revs ("other" for a stranger's)
		wantCreated int64    // revision number created, 0 for none
		wantUpdated int64    // revision number renumbered to, 0 for none
		wantBump    int32
		wantErr     string
	}{
		{name: "first", wantCreated: 1},
		{name: "new template", revs: []string{"a", "b"}, wantCreated: 3},
		{name: "current is newest", revs: []string{"a", "cur"}},
		{name: "rolled back", revs: []string{"cur", "b"}, wantUpdated: 3},
		{name: "ours, not yet cached", revs: []string{"a"}, there: "cur"},
		{name: "hash collision", revs: []string{"a"}, there: "other", wantBump: 1, wantErr: "holds another template"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, f, bumped := newHistory("cur", ByHash, nil)
			var revs []*api.ControllerRevision
			for i, img := range tc.revs {
				revs = append(revs, revision(h, img, int64(i+1)))
			}
			switch tc.there {
			case "cur":
				f.there = revision(h, "cur", 9)
			case "other":
				f.there = revision(h, "other", 9)
				f.there.Name = RevisionName("web", h.Hash())
			}
			hash, err := h.Current(context.Background(), revs)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
			} else if err != nil || hash != h.Hash() {
				t.Fatalf("Current = %q, %v; want %q", hash, err, h.Hash())
			}
			if *bumped != tc.wantBump {
				t.Errorf("collision count set to %d, want %d", *bumped, tc.wantBump)
			}
			var created, updated int64
			if len(f.created) == 1 {
				c := f.created[0]
				created = c.Revision
				if c.Name != "web-"+hash || c.Labels["app"] != "web" || !owner.IsControlledBy(&c.ObjectMeta, "uid-1") {
					t.Errorf("created %+v", c.ObjectMeta)
				}
				if tmpl, err := TemplateOf(c); err != nil || tmpl.Spec.Containers[0].Image != "cur" {
					t.Errorf("created revision records %+v, %v", tmpl, err)
				}
			}
			if len(f.updated) == 1 {
				updated = f.updated[0].Revision
			}
			if created != tc.wantCreated || updated != tc.wantUpdated || len(f.created)+len(f.updated) > 1 {
				t.Errorf("created %v, updated %v; want revision %d created, %d renumbered", f.created, f.updated, tc.wantCreated, tc.wantUpdated)
			}
		})
	}
}

func TestHistoryPrune(t *testing.T) {
	i32 := func(n int32) *int32 { return &n }
	for _, tc := range []struct {
		name    string
		key     RevisionKey
		limit   *int32
		keep    func(h *History, revs []*api.ControllerRevision) []string
		podRevs []int // indexes of revisions pods run
		want    []string
	}{
		{name: "within the default limit", key: ByHash},
		{name: "limit 1 by hash keeps current and pods'", key: ByHash, limit: i32(1), podRevs: []int{1},
			keep: func(_ *History, r []*api.ControllerRevision) []string { return []string{ByHash(r[4])} },
			want: []string{"a", "c"}},
		{name: "limit 0 by name", key: ByName, limit: i32(0), podRevs: []int{0},
			keep: func(_ *History, r []*api.ControllerRevision) []string { return []string{r[3].Name, r[4].Name} },
			want: []string{"b", "c"}},
		{name: "a name is no hash", key: ByHash, limit: i32(0),
			keep: func(_ *History, r []*api.ControllerRevision) []string { return []string{r[4].Name} },
			want: []string{"a", "b", "c", "d", "e"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, f, _ := newHistory("e", tc.key, tc.limit)
			var revs []*api.ControllerRevision
			for i, img := range []string{"a", "b", "c", "d", "e"} {
				revs = append(revs, revision(h, img, int64(i+1)))
			}
			var pods []*api.Pod
			for _, i := range tc.podRevs {
				pods = append(pods, &api.Pod{ObjectMeta: api.ObjectMeta{Labels: map[string]string{api.LabelControllerRevisionHash: tc.key(revs[i])}}})
			}
			var keep []string
			if tc.keep != nil {
				keep = tc.keep(h, revs)
			}
			if err := h.Prune(context.Background(), revs, pods, keep...); err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, img := range tc.want {
				want = append(want, revision(h, img, 0).Name)
			}
			if !slices.Equal(f.deleted, want) {
				t.Errorf("deleted %v, want %v", f.deleted, want)
			}
		})
	}
}

func TestHistoryRevisionsOwnedOldestFirst(t *testing.T) {
	h, _, _ := newHistory("a", ByHash, nil)
	r1, r2, r3 := revision(h, "a", 2), revision(h, "b", 1), revision(h, "c", 1)
	stranger := revision(h, "d", 0)
	stranger.OwnerReferences[0].UID = "uid-2"
	got := h.Revisions([]*api.ControllerRevision{r1, r3, stranger, r2})
	// Equal revision numbers go by name.
	first, second := r2, r3
	if r3.Name < r2.Name {
		first, second = r3, r2
	}
	if want := []*api.ControllerRevision{first, second, r1}; !slices.Equal(got, want) {
		t.Errorf("Revisions = %v, want %v", got, want)
	}
}
