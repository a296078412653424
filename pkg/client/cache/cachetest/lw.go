// Package cachetest feeds informers in unit tests.
package cachetest

import (
	"context"

	"minik8s/pkg/client"
)

// LW lists fixed objects, then forwards the events a test sends on Events.
type LW[PT any] struct {
	Items  []PT
	Events chan client.Event[PT]
}

// NewLW returns an LW that lists items.
func NewLW[PT any](items ...PT) *LW[PT] {
	return &LW[PT]{Items: items, Events: make(chan client.Event[PT])}
}

// List returns the fixed objects.
func (f *LW[PT]) List(context.Context, client.ListOptions) ([]PT, string, error) {
	return f.Items, "1", nil
}

// Watch forwards the test's events until ctx ends.
func (f *LW[PT]) Watch(ctx context.Context, _ client.ListOptions) <-chan client.Event[PT] {
	return Forward(ctx, f.Events)
}

// Forward is a watch of the events sent on events: it ends (closed) with
// ctx, as a real one does.
func Forward[PT any](ctx context.Context, events <-chan client.Event[PT]) <-chan client.Event[PT] {
	out := make(chan client.Event[PT])
	go func() {
		defer close(out)
		for {
			select {
			case ev := <-events:
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}
