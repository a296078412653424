package apiserver

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	log "github.com/sirupsen/logrus"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"

	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/rbac"
	"minik8s/pkg/storage"
)

// watchEvent is one line of a watch stream.
type watchEvent struct {
	Type   api.EventType `json:"type"`
	Object any           `json:"object"`
}

// watch streams changes as newline-delimited JSON. With no resourceVersion
// (or "0") it first sends the current objects as ADDED, as Kubernetes does;
// with one it sends exactly the changes after it, so a client that
// reconnects with the last version it saw misses nothing.
func (h *handlers) watch(c *gin.Context, ns string, f registry.Filter) {
	ctx := c.Request.Context()
	opts := requestOf(c).query.list
	if opts == nil {
		opts = &metainternalversion.ListOptions{Watch: true}
	}
	if t := opts.TimeoutSeconds; t != nil && *t > 0 {
		var cancel func()
		ctx, cancel = context.WithTimeout(ctx, time.Duration(*t)*time.Second)
		defer cancel()
	}
	if err := refuseForeignWatch(c.Request); err != nil {
		fail(c, err)
		return
	}
	budget, err := h.srv.watches.acquire(clientOf(c))
	if err != nil {
		fail(c, err)
		return
	}
	defer budget.release()
	if t := opts.TimeoutSeconds; t != nil && *t < 0 {
		// A timeout already past: the watch ends at once, as in Kubernetes.
		if out, _, err := openWatchSink(ctx, c); err == nil {
			out.close()
		}
		return
	}
	// sendInitialEvents: client-go's streaming list (WatchList): the
	// current objects as ADDED, then a BOOKMARK saying they are all there.
	initialEvents := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	initial, from, err := h.watchStart(ctx, opts.ResourceVersion, opts.SendInitialEvents, ns, f, budget)
	if err != nil {
		fail(c, err)
		return
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	events, err := h.reg.Watch(wctx, ns, from)
	if err != nil {
		fail(c, err)
		return
	}
	events = boundedEvents(wctx, stop, events, budget)
	out, ctx, err := openWatchSink(ctx, c)
	if err != nil {
		return // the upgrade answered the client itself
	}
	defer out.close()
	w := &watchWriter{h: h, ctx: ctx, out: out, asTable: wantsTable(c.Request), budget: budget}
	if initial != nil && !w.initial(initial, f, initialEvents) {
		return
	}
	if initialEvents && !w.write(watchEvent{Type: api.Bookmark, Object: h.bookmark(from, true)}, false, 0) {
		return
	}
	// allowWatchBookmarks: a BOOKMARK at the last version seen every
	// BookmarkInterval, filtered-out changes included.
	var tick <-chan time.Time
	if opts.AllowWatchBookmarks {
		t := time.NewTicker(h.srv.cfg.BookmarkInterval)
		defer t.Stop()
		tick = t.C
	}
	last := from
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok || !w.change(ev, f, len(events) > 0) {
				return
			}
			last = max(last, ev.Revision)
		case <-tick:
			if !w.write(watchEvent{Type: api.Bookmark, Object: h.bookmark(last, false)}, false, 0) {
				return
			}
		}
	}
}

// watchWriter writes the events of one watch.
type watchWriter struct {
	h           *handlers
	ctx         context.Context
	out         watchSink
	asTable     bool
	columnsSent bool
	budget      *watchBudget
}

// write sends ev, as a Table row when the client asked for Tables. held is
// what the budget counts for ev until now (its stored size): once encoded
// the event counts as its encoding instead, until written; false ends the
// watch, when the write failed or the encoding does not fit the budget.
// Events are flushed when no more are waiting (more is false): a burst of
// changes goes out in a few writes, not one each.
func (w *watchWriter) write(ev watchEvent, more bool, held int) bool {
	if o, ok := ev.Object.(api.Object); ok && ev.Type != api.Bookmark {
		if w.asTable {
			ev.Object = w.h.table(w.ctx, []api.Object{o}, o.GetObjectMeta().ResourceVersion, !w.columnsSent)
			w.columnsSent = true
		} else {
			ev.Object = w.h.show(o)
		}
	}
	data, err := json.Marshal(ev)
	w.budget.give(int64(held))
	if err != nil {
		log.WithError(err).WithField("resource", w.h.reg.Resource.Name).Warn("apiserver: watch event not encodable")
		return false
	}
	data = append(data, '\n')
	n := int64(len(data))
	if !w.budget.take(n) {
		log.WithField("resource", w.h.reg.Resource.Name).Debug("apiserver: watch cut off: its client's watches hold too much")
		return false
	}
	err = w.out.write(data)
	w.budget.give(n)
	if err != nil {
		return false
	}
	if !more {
		return w.out.flush() == nil
	}
	return true
}

// change sends a change of the store as the watch's filter sees it; false
// ends the watch.
func (w *watchWriter) change(ev storage.Event, f registry.Filter, more bool) bool {
	if ev.Type == api.Error && !errdefs.IsGone(ev.Err) {
		// The store's watch broke (etcd, or this server, going away):
		// the stream just ends, as Kubernetes ends it, and the client
		// resumes from the last version it saw. An ERROR event would
		// make client-go's reflectors list again and miss the changes
		// between.
		log.WithError(ev.Err).WithField("resource", w.h.reg.Resource.Name).Debug("apiserver: watch ended")
		return false
	}
	if ev.Type == api.Error {
		code, reason := errdefs.HTTPStatus(ev.Err)
		st := api.Status{Error: ev.Err.Error(), Reason: reason, Code: code}
		kubernetesStatus(&st, ev.Err, rbac.Attributes{})
		w.write(watchEvent{Type: api.Error, Object: st}, false, 0)
		return false
	}
	typ, ok := filtered(ev.Type, ev.Object, ev.PrevObject, f)
	if !ok {
		w.budget.give(int64(ev.Size))
		if !more {
			return w.out.flush() == nil // what was held back for this one
		}
		return true
	}
	return w.write(watchEvent{Type: typ, Object: ev.Object}, more, ev.Size)
}

// initial sends the objects a watch starts with, page by page; false ends
// the watch. withBookmark: a BOOKMARK follows them.
func (w *watchWriter) initial(l *initialList, f registry.Filter, withBookmark bool) bool {
	for {
		for l.i < len(l.page.Objects) {
			o, size := l.page.Objects[l.i], l.page.Sizes[l.i]
			l.page.Objects[l.i] = nil // sent, it is the encoding's to hold
			l.i++
			more := withBookmark || l.i < len(l.page.Objects) || l.page.Next != ""
			if !f.Matches(o) {
				w.budget.give(int64(size))
				continue
			}
			if !w.write(watchEvent{Type: api.Added, Object: o}, more, size) {
				return false
			}
		}
		if l.page.Next == "" {
			return w.out.flush() == nil
		}
		if err := l.read(w.ctx, l.page.Next); err != nil {
			log.WithError(err).WithField("resource", w.h.reg.Resource.Name).Debug("apiserver: watch ended in its initial list")
			return false
		}
	}
}

// watchStart says where a watch from resourceVersion rv begins, as
// Kubernetes' watch cache has it: with no version (or "0"), or with the
// initial events asked for, the current objects (streamed, see
// initialList) and the revision they are read at (sendInitialEvents=false without a version: from now, without
// them); else that version, if the store still has the changes after it
// (410 Gone otherwise). A version the store has not reached is waited for,
// then refused (tooLargeResourceVersion).
func (h *handlers) watchStart(ctx context.Context, rv string, sendInitialEvents *bool, ns string, f registry.Filter, budget *watchBudget) (*initialList, int64, error) {
	n, err := parseResourceVersion(rv)
	if err != nil {
		return nil, 0, err
	}
	if n > 0 {
		if err := h.srv.waitRevision(ctx, n); err != nil {
			return nil, 0, err
		}
	}
	switch {
	case sendInitialEvents != nil && *sendInitialEvents:
		return h.initialList(ctx, ns, budget)
	case n == 0 && sendInitialEvents != nil:
		from, err := h.srv.store.Revision(ctx)
		return nil, from, err
	case n == 0:
		return h.initialList(ctx, ns, budget)
	}
	return nil, n, nil
}

// initialList starts the objects a watch begins with: their first page
// read, counted against budget, and the revision it was read at.
func (h *handlers) initialList(ctx context.Context, ns string, budget *watchBudget) (*initialList, int64, error) {
	l := &initialList{reg: h.reg, ns: ns, budget: budget, limit: 1}
	if err := l.read(ctx, ""); err != nil {
		return nil, 0, err
	}
	return l, l.page.Revision, nil
}

// bookmark is a BOOKMARK event's object: an empty object of the kind at
// revision rev; initialEnd marks the end of the initial events.
func (h *handlers) bookmark(rev int64, initialEnd bool) api.Object {
	o := h.newObject()
	*o.GetTypeMeta() = api.TypeMeta{Kind: h.reg.Resource.Kind, APIVersion: h.groupVersion()}
	meta := o.GetObjectMeta()
	meta.ResourceVersion = strconv.FormatInt(rev, 10)
	if initialEnd {
		meta.Annotations = map[string]string{"k8s.io/initial-events-end": "true"}
	}
	return o
}

// filtered says how a change looks through a filter: an object that starts
// matching is ADDED, one that stops matching is DELETED.
func filtered(typ api.EventType, obj, prev api.Object, f registry.Filter) (api.EventType, bool) {
	if f.Empty() {
		return typ, true
	}
	now := f.Matches(obj)
	if typ != api.Modified || prev == nil {
		return typ, now
	}
	before := f.Matches(prev)
	switch {
	case now && before:
		return api.Modified, true
	case now:
		return api.Added, true
	case before:
		return api.Deleted, true
	}
	return typ, false
}
