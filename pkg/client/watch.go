package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/wait"
)

// Event is one change of a watched object.
type Event[PT any] struct {
	Type   api.EventType
	Object PT
}

const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 2 * time.Second
	// maxEventBytes bounds one line of a watch stream.
	maxEventBytes = 8 << 20
)

// Watch streams the changes of the matching objects until ctx ends, then
// closes the channel. Without opts.ResourceVersion it first lists and sends
// every object as ADDED. When the connection drops (an apiserver restart,
// say) it reconnects from the last version it delivered, so no event is lost;
// if the server no longer has that version it lists again and sends the
// difference (ADDED, MODIFIED, DELETED) against what it had delivered.
func (r *ResourceClient[T, PT]) Watch(ctx context.Context, opts ListOptions) <-chan Event[PT] {
	out := make(chan Event[PT], 64)
	go r.watchLoop(ctx, opts, out)
	return out
}

func objectKey(o api.Object) string {
	m := o.GetObjectMeta()
	return m.Namespace + "/" + m.Name
}

func (r *ResourceClient[T, PT]) watchLoop(ctx context.Context, opts ListOptions, out chan<- Event[PT]) {
	defer close(out)
	emit := func(typ api.EventType, obj PT) bool {
		select {
		case out <- Event[PT]{Type: typ, Object: obj}:
			return true
		case <-ctx.Done():
			return false
		}
	}
	known := map[string]PT{}
	rv := opts.ResourceVersion
	needList := rv == ""
	backoff := minBackoff
	for ctx.Err() == nil {
		if needList {
			items, listRV, err := r.List(ctx, opts)
			if err != nil {
				log.WithError(err).WithField("resource", r.res.Name).Debug("watch: list failed, retrying")
				if !sleep(ctx, &backoff) {
					return
				}
				continue
			}
			seen := make(map[string]PT, len(items))
			for _, item := range items {
				k := objectKey(item)
				seen[k] = item
				old, ok := known[k]
				switch {
				case !ok:
					if !emit(api.Added, item) {
						return
					}
				case old.GetObjectMeta().ResourceVersion != item.GetObjectMeta().ResourceVersion:
					if !emit(api.Modified, item) {
						return
					}
				}
			}
			for k, old := range known {
				if _, ok := seen[k]; !ok && !emit(api.Deleted, old) {
					return
				}
			}
			known, rv, needList = seen, listRV, false
		}
		delivered := false
		err := r.stream(ctx, opts, rv, func(ev Event[PT]) bool {
			delivered = true
			rv = ev.Object.GetObjectMeta().ResourceVersion
			if ev.Type == api.Bookmark {
				return true
			}
			k := objectKey(ev.Object)
			if ev.Type == api.Deleted {
				delete(known, k)
			} else {
				known[k] = ev.Object
			}
			return emit(ev.Type, ev.Object)
		})
		if ctx.Err() != nil {
			return
		}
		if errdefs.IsGone(err) {
			needList = true
			continue
		}
		if delivered {
			backoff = minBackoff
		}
		log.WithError(err).WithField("resource", r.res.Name).Debug("watch: stream ended, reconnecting")
		if !sleep(ctx, &backoff) {
			return
		}
	}
}

// stream follows one watch connection from version rv, calling fn for each
// event, until the connection ends.
func (r *ResourceClient[T, PT]) stream(ctx context.Context, opts ListOptions, rv string, fn func(Event[PT]) bool) error {
	o := opts
	o.ResourceVersion = rv
	resp, err := r.c.send(ctx, r.c.stream, http.MethodGet, r.path("")+o.query(true), nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), maxEventBytes)
	for sc.Scan() {
		var line struct {
			Type   api.EventType   `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return fmt.Errorf("watch %s: bad event: %w", r.res.Name, err)
		}
		if line.Type == api.Error {
			var st api.Status
			_ = json.Unmarshal(line.Object, &st)
			return errdefs.FromHTTP(st.Code, st.Reason, st.Field, st.Error)
		}
		obj := PT(new(T))
		if err := json.Unmarshal(line.Object, obj); err != nil {
			return fmt.Errorf("watch %s: bad object: %w", r.res.Name, err)
		}
		if !fn(Event[PT]{Type: line.Type, Object: obj}) {
			return ctx.Err()
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("watch %s: %w: %v", r.res.Name, errdefs.ErrUnavailable, err)
	}
	return fmt.Errorf("watch %s: stream closed: %w", r.res.Name, errdefs.ErrUnavailable)
}

// sleep waits for the back-off (doubling it up to maxBackoff); false if ctx ended.
func sleep(ctx context.Context, backoff *time.Duration) bool {
	d := *backoff
	*backoff *= 2
	if *backoff > maxBackoff {
		*backoff = maxBackoff
	}
	return wait.Sleep(ctx, d)
}
