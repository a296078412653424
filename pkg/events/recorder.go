// Package events records Events about objects for the components (the
// scheduler, the kubelets, the controllers), as client-go's recorder does:
// without blocking the caller, and folding repeats of an event into one
// whose count grows.
package events

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/errdefs"
)

// queueSize bounds the events waiting to be written: beyond it they are
// dropped (and logged), never waited for.
const queueSize = 1024

// seenMax bounds the repeats remembered for folding.
const seenMax = 4096

// Recorder writes events through a client. Its zero value and nil record
// nothing, so components may run without one.
type Recorder struct {
	client    *client.Client
	component string
	host      string
	queue     chan *api.Event

	mu   sync.Mutex
	seen map[string]*api.Event // by what makes a repeat
}

// writeTries bounds the tries of one event.
const writeTries = 5

// New returns a recorder for component (on host, when it runs on one);
// Run writes what it records.
func New(c *client.Client, component, host string) *Recorder {
	return &Recorder{client: c, component: component, host: host, queue: make(chan *api.Event, queueSize), seen: map[string]*api.Event{}}
}

// Run writes the recorded events until ctx ends.
func (r *Recorder) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-r.queue:
			if err := r.writeRetrying(ctx, e); err != nil && ctx.Err() == nil {
				log.WithError(err).WithFields(log.Fields{"reason": e.Reason, "object": e.InvolvedObject.Name}).Debug("event not recorded")
			}
		}
	}
}

// writeRetrying is write, tried again a few times while the apiserver
// cannot answer (a busy etcd, a timeout): an event is recorded once, and
// a controller that found what it says does not say it again (client-go's
// recorder tries an event up to 12 times).
func (r *Recorder) writeRetrying(ctx context.Context, e *api.Event) error {
	backoff := 250 * time.Millisecond
	for try := 1; ; try++ {
		err := r.write(ctx, e)
		if err == nil || try == writeTries || !(errdefs.IsUnavailable(err) || errdefs.IsTimeout(err) || errdefs.IsTooManyRequests(err)) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
		backoff *= 2
	}
}

// Eventf records that reason happened to obj (typ: api.EventTypeNormal or
// api.EventTypeWarning).
func (r *Recorder) Eventf(obj api.Object, typ, reason, format string, args ...any) {
	if r == nil || r.client == nil || obj == nil {
		return
	}
	meta := obj.GetObjectMeta()
	kind := obj.GetTypeMeta().Kind
	if kind == "" {
		kind = reflect.TypeOf(obj).Elem().Name()
	}
	ns := meta.Namespace
	if ns == "" {
		ns = api.DefaultNamespace // cluster-scoped objects' events, as Kubernetes files them
	}
	now := time.Now().UTC().Truncate(time.Second)
	e := &api.Event{ObjectMeta: api.ObjectMeta{Namespace: ns},
		InvolvedObject: api.ObjectReference{Kind: kind, Namespace: meta.Namespace, Name: meta.Name, UID: meta.UID},
		Reason:         reason, Message: fmt.Sprintf(format, args...), Type: typ,
		Source:         api.EventSource{Component: r.component, Host: r.host},
		FirstTimestamp: &now, LastTimestamp: &now, Count: 1,
		ReportingComponent: r.component, ReportingInstance: r.host}
	select {
	case r.queue <- e:
	default:
		log.WithFields(log.Fields{"reason": reason, "object": meta.Name}).Warn("event queue full: event dropped")
	}
}

// write creates e, or raises the count of the repeat it is.
func (r *Recorder) write(ctx context.Context, e *api.Event) error {
	key := e.Namespace + "\x00" + e.InvolvedObject.Kind + "\x00" + e.InvolvedObject.Name + "\x00" + e.InvolvedObject.UID + "\x00" +
		e.Type + "\x00" + e.Reason + "\x00" + e.Message
	r.mu.Lock()
	prev := r.seen[key]
	r.mu.Unlock()
	events := r.client.Events(e.Namespace)
	if prev != nil {
		next := *prev
		next.Count++
		next.LastTimestamp = e.LastTimestamp
		out, err := events.Update(ctx, &next)
		if err == nil {
			r.remember(key, out)
			return nil
		}
		if !errdefs.IsNotFound(err) && !errdefs.IsConflict(err) {
			return err
		}
		// Expired or changed: start again.
	}
	e.Name = e.InvolvedObject.Name + "." + strconv.FormatInt(time.Now().UnixNano(), 16)
	out, err := events.Create(ctx, e)
	if err != nil {
		return err
	}
	r.remember(key, out)
	return nil
}

func (r *Recorder) remember(key string, e *api.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.seen) >= seenMax {
		clear(r.seen)
	}
	r.seen[key] = e
}
