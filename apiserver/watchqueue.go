package apiserver

import (
	"context"
	"fmt"

	log "github.com/sirupsen/logrus"

	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/storage"
)

// boundedEvents relays a watch's events to its writer, counting the bytes
// of those waiting against the watch's budget: a watch whose queue would
// pass the budget, or that is watcherBuffer events behind, is cut off (the
// channel closes, stop ends the store's or the cache's watch) and its
// client resumes from the last version it got. The events taken from the
// channel stay counted until the writer gives them back.
func boundedEvents(ctx context.Context, stop func(), in <-chan storage.Event, b *watchBudget) <-chan storage.Event {
	out := make(chan storage.Event, registry.WatcherBuffer)
	go func() {
		defer close(out)
		defer stop()
		for {
			var ev storage.Event
			var ok bool
			select {
			case <-ctx.Done():
				return
			case ev, ok = <-in:
				if !ok {
					return
				}
			}
			if ev.Type != api.Error && !b.take(int64(ev.Size)) {
				log.WithField("revision", ev.Revision).Debug("apiserver: watch cut off: its events waiting pass its budget")
				return
			}
			select {
			case out <- ev:
			default:
				b.give(int64(ev.Size))
				if b != nil {
					b.l.cutOff.Inc()
				}
				log.WithField("revision", ev.Revision).Debug("apiserver: watch cut off: too many events behind")
				return
			}
		}
	}()
	return out
}

// initialList streams the objects a watch starts with from the store, a
// page at a time, all at the revision of the first: a page's bytes count
// against the watch's budget from its read until each object is sent, so
// a client that reads nothing holds one page, not the whole list.
type initialList struct {
	reg    *registry.Store
	ns     string
	budget *watchBudget
	page   storage.Page
	i      int // next object of page to send
	limit  int
}

const (
	// listPageBytes is the size initial list pages aim at: the number of
	// objects a page asks for doubles while pages come out smaller and
	// halves while larger, from one, so a few large objects are never
	// read at once.
	listPageBytes = 256 << 10
	listPageMax   = 512
)

// read reads the page after key after ("" first), one page of the
// client's at a time, and counts it against the budget: beyond it, 429
// (nothing was sent yet when the first page is refused).
func (l *initialList) read(ctx context.Context, after string) error {
	var page storage.Page
	var err error
	l.budget.readPage(func() {
		page, err = l.reg.Storage.ListPage(ctx, l.reg.Prefix(l.ns), l.page.Revision, after, l.limit, l.reg.Resource.New)
		if err != nil {
			return
		}
		size := 0
		for _, n := range page.Sizes {
			size += n
		}
		if !l.budget.take(int64(size)) {
			err = fmt.Errorf("the watches of %s hold more than they may in the server (%d bytes a watch, %d a client) and read too slowly: %w",
				l.budget.client, l.budget.l.maxBytes, l.budget.l.maxClient, errdefs.ErrTooManyRequests)
			return
		}
		switch {
		case size < listPageBytes/2 && l.limit < listPageMax:
			l.limit *= 2
		case size > listPageBytes && l.limit > 1:
			l.limit /= 2
		}
	})
	if err != nil {
		return err
	}
	l.page, l.i = page, 0
	return nil
}
