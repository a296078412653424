package expectations

import (
	"testing"
	"time"
)

func TestExpectations(t *testing.T) {
	e := New()
	clock := time.Unix(1000, 0)
	e.now = func() time.Time { return clock }
	const k = "ns/rs"
	if !e.Satisfied(k) {
		t.Fatal("nothing expected, yet not satisfied")
	}
	e.ExpectCreations(k, 2)
	if e.Satisfied(k) {
		t.Fatal("satisfied with two creations outstanding")
	}
	e.CreationObserved(k)
	if e.Satisfied(k) {
		t.Fatal("satisfied with one creation outstanding")
	}
	e.CreationObserved(k)
	if !e.Satisfied(k) {
		t.Fatal("not satisfied after both creations were seen")
	}
	e.CreationObserved(k) // an extra observation does not go negative
	e.ExpectDeletions(k, []string{"u1", "u2"})
	e.DeletionObserved(k, "u1")
	e.DeletionObserved(k, "u1") // marked, then gone: counted once
	if e.Satisfied(k) {
		t.Fatal("satisfied with u2 not yet deleted")
	}
	e.DeletionObserved(k, "u2")
	if !e.Satisfied(k) {
		t.Fatal("not satisfied after both deletions")
	}
	e.ExpectCreations(k, 1)
	clock = clock.Add(TTL + time.Second)
	if !e.Satisfied(k) {
		t.Fatal("expectations never expire")
	}
	e.Forget(k)
	if len(e.m) != 0 {
		t.Fatal("forget kept the record")
	}
}
