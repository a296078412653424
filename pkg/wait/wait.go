// Package wait runs periodic work bound to a context, as the components'
// background loops (heartbeats, sweeps, retries) need it.
package wait

import (
	"context"
	"time"
)

// Every calls fn once per period, the first time one period from now,
// until ctx ends. A call that runs longer than the period delays the next.
func Every(ctx context.Context, period time.Duration, fn func()) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			// Both may be ready (a tick due while fn ran); select picks
			// either, and no call may start once ctx has ended.
			if ctx.Err() != nil {
				return
			}
			fn()
		}
	}
}

// Sleep waits d, or until ctx ends; false says ctx ended first. A d of
// zero or less does not wait: it only reports whether ctx is still live.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
