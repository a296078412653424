package trigger

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/api/validation"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
	"minik8s/pkg/function/call"
	"minik8s/pkg/wait"
)

// Queue triggers consume a NATS subject through JetStream: a stream per
// subject and a durable consumer per trigger, shared by every runner (the
// server spreads the messages among them). Each message is one call,
// stored as a FuncInstance named after the trigger, the message's stream
// sequence and the attempt, so a redelivered message whose call already
// ran is not run again; the message is acknowledged once its call has
// ended. A failed call is tried again, up to maxDeliver attempts, and the
// message is then published to the dead-letter subject.

// queueAckWait is how long a message may go unacknowledged before the
// server hands it to another runner; a runner working on it keeps it.
const queueAckWait = 30 * time.Second

// Queues consumes the queue triggers' subjects.
type Queues struct {
	self     string
	client   *client.Client
	triggers *cache.Informer[api.Trigger, *api.Trigger]
	refs     Refs
	// ended wakes the attempts waiting for an instance ("ns/name") when it
	// leaves the runner's informer of unfinished instances.
	ended *wait.Notifier
	nc    *nats.Conn
	js    jetstream.JetStream

	mu       sync.Mutex
	running  map[string]jetstream.ConsumeContext // by trigger UID
	inflight chan struct{}
}

// NewQueues connects to NATS at url; Run consumes.
func NewQueues(self string, c *client.Client, triggers *cache.Informer[api.Trigger, *api.Trigger], refs Refs, url string) (*Queues, error) {
	nc, err := nats.Connect(url, nats.Name("minik8s-funcrunner-"+self), nats.MaxReconnects(-1))
	if err != nil {
		return nil, fmt.Errorf("funcrunner: connecting to NATS at %s: %w", url, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &Queues{self: self, client: c, triggers: triggers, refs: refs, ended: wait.NewNotifier(), nc: nc, js: js,
		running: map[string]jetstream.ConsumeContext{}, inflight: make(chan struct{}, 64)}, nil
}

// Ended says the instance key ("namespace/name") has ended: the attempt
// waiting for it wakes. The runner calls it when an instance leaves its
// informer of unfinished instances.
func (q *Queues) Ended(key string) { q.ended.Wake(key) }

// Run keeps a consumer for each queue trigger until ctx ends.
func (q *Queues) Run(ctx context.Context) {
	defer q.nc.Close()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	var lastSweep time.Time
	for {
		stopped := q.reconcile(ctx)
		if q.triggers.HasSynced() && (stopped || time.Since(lastSweep) >= queueSweepEvery) {
			if err := q.sweep(ctx); err != nil && ctx.Err() == nil {
				log.WithError(err).Warn("funcrunner: sweeping the streams and consumers of removed queue triggers failed")
			}
			lastSweep = time.Now()
		}
		select {
		case <-ctx.Done():
			q.mu.Lock()
			for _, cc := range q.running {
				cc.Stop()
			}
			q.mu.Unlock()
			return
		case <-tick.C:
		}
	}
}

// reconcile consumes the queue triggers in the cache, and stops consuming
// removed ones, which it reports. A consumption that ended (its consumer
// or stream was deleted) starts again.
func (q *Queues) reconcile(ctx context.Context) (stopped bool) {
	want := map[string]*api.Trigger{}
	for _, t := range q.triggers.Lister().List(nil) {
		if t.Spec.Queue != nil {
			want[t.UID] = t
		}
	}
	q.mu.Lock()
	for uid, cc := range q.running {
		select {
		case <-cc.Closed():
			delete(q.running, uid)
			continue
		default:
		}
		if want[uid] == nil {
			cc.Stop()
			delete(q.running, uid)
			stopped = true
		}
	}
	q.mu.Unlock()
	for uid, t := range want {
		q.mu.Lock()
		_, ok := q.running[uid]
		q.mu.Unlock()
		if ok {
			continue
		}
		if err := q.start(ctx, t); err != nil && ctx.Err() == nil {
			log.WithError(err).WithField("trigger", t.Namespace+"/"+t.Name).Warn("funcrunner: consuming a queue failed")
			q.notReady(ctx, t, err)
		}
	}
	return stopped
}

// notReady records on t's status why it is not consumed (tried again at
// the next sync).
func (q *Queues) notReady(ctx context.Context, t *api.Trigger, err error) {
	msg := "not consumed: " + err.Error()
	if !t.Status.Ready && t.Status.Message == msg {
		return
	}
	next := cache.DeepCopy(t)
	next.Status = api.TriggerStatus{Ready: false, ServedBy: q.self, Message: msg}
	if _, err := q.client.Triggers(t.Namespace).UpdateStatus(ctx, next); err != nil && !errdefs.IsConflict(err) && ctx.Err() == nil {
		log.WithError(err).WithField("trigger", t.Namespace+"/"+t.Name).Warn("funcrunner: recording why a queue trigger is not consumed failed")
	}
}

// ensureStream returns the stream that keeps the messages of subject
// (a pattern, maybe), made if need be. JetStream refuses two streams on
// overlapping subjects, so triggers share streams: one whose subject
// covers this one serves it (orders.> serves orders.new), and a trigger
// whose subject covers one stream's takes that stream over (its subject
// widened to this one). Subjects that overlap without either covering
// the other (orders.* and orders.new.>, or one covering two streams)
// cannot have one stream each: the trigger is not ready, saying so.
func (q *Queues) ensureStream(ctx context.Context, subject string) (string, error) {
	var overlapping []*jetstream.StreamInfo
	streams := q.js.ListStreams(ctx, jetstream.WithStreamListSubject(subject))
	for info := range streams.Info() {
		if strings.HasPrefix(info.Config.Name, streamPrefix) {
			overlapping = append(overlapping, info)
		}
	}
	if err := streams.Err(); err != nil {
		return "", fmt.Errorf("the streams of %q: %w", subject, err)
	}
	for _, in := range overlapping {
		for _, p := range in.Config.Subjects {
			if validation.SubjectCovers(p, subject) {
				return in.Config.Name, nil
			}
		}
	}
	switch {
	case len(overlapping) == 0:
		// Created, not updated: every runner makes the same stream, and
		// the server's update of an existing stream races with another
		// runner's consumer create on it (nats-server's fileStore, under
		// -race).
		cfg := jetstream.StreamConfig{Name: streamName(subject), Subjects: []string{subject},
			Storage: jetstream.FileStorage, Retention: jetstream.LimitsPolicy}
		_, err := q.js.CreateStream(ctx, cfg)
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			// Made otherwise before (an older version): brought in line.
			_, err = q.js.UpdateStream(ctx, cfg)
		}
		if err != nil {
			return "", fmt.Errorf("the stream of %q: %w", subject, err)
		}
		return cfg.Name, nil
	case len(overlapping) == 1 && coversAll(subject, overlapping[0].Config.Subjects):
		cfg := overlapping[0].Config
		cfg.Subjects = []string{subject}
		if _, err := q.js.UpdateStream(ctx, cfg); err != nil {
			return "", fmt.Errorf("widening stream %s to %q: %w", cfg.Name, subject, err)
		}
		log.WithFields(log.Fields{"stream": cfg.Name, "subject": subject}).Info("funcrunner: a queue trigger's subject covers a stream's: the stream widened to it")
		return cfg.Name, nil
	}
	var taken []string
	for _, in := range overlapping {
		taken = append(taken, fmt.Sprintf("%s (%s)", in.Config.Name, strings.Join(in.Config.Subjects, ", ")))
	}
	return "", fmt.Errorf("subject %q overlaps the subjects of %s without one covering the other: JetStream keeps one stream per subject, so a queue trigger's subject must cover, or be covered by, those other triggers take (orders.> with orders.new, not orders.* with *.new)",
		subject, strings.Join(taken, ", "))
}

// coversAll says whether pattern covers every one of subjects.
func coversAll(pattern string, subjects []string) bool {
	for _, s := range subjects {
		if !validation.SubjectCovers(pattern, s) {
			return false
		}
	}
	return true
}

// streamName is the stream a subject's first trigger makes (triggers on
// subjects it covers share it).
func streamName(subject string) string {
	sum := sha256.Sum256([]byte(subject))
	return streamPrefix + hex.EncodeToString(sum[:8])
}

// start makes the trigger's stream and durable consumer, consumes, and
// marks the trigger ready.
func (q *Queues) start(ctx context.Context, t *api.Trigger) error {
	qt := t.Spec.Queue
	stream, err := q.ensureStream(ctx, qt.Subject)
	if err != nil {
		return err
	}
	cons, err := q.js.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{
		Durable: consumerPrefix + t.UID, FilterSubject: qt.Subject, AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: queueAckWait, MaxAckPending: 1000, DeliverPolicy: jetstream.DeliverNewPolicy})
	if err != nil {
		return fmt.Errorf("the consumer of trigger %s: %w", t.Name, err)
	}
	trigger := cache.DeepCopy(t)
	cc, err := cons.Consume(func(msg jetstream.Msg) {
		q.inflight <- struct{}{}
		go func() {
			defer func() { <-q.inflight }()
			q.handle(ctx, trigger, msg)
		}()
	})
	if err != nil {
		return err
	}
	q.mu.Lock()
	q.running[t.UID] = cc
	q.mu.Unlock()
	if !t.Status.Ready {
		next := cache.DeepCopy(t)
		next.Status = api.TriggerStatus{Ready: true, ServedBy: q.self, Message: "stream " + stream + ", consumer " + consumerPrefix + t.UID}
		if _, err := q.client.Triggers(t.Namespace).UpdateStatus(ctx, next); err != nil && !errdefs.IsConflict(err) {
			return err
		}
	}
	return nil
}

// handle runs one message's call to its end and settles the message.
func (q *Queues) handle(ctx context.Context, t *api.Trigger, msg jetstream.Msg) {
	md, err := msg.Metadata()
	if err != nil {
		_ = msg.Nak()
		return
	}
	maxTries := int(t.Spec.Queue.MaxDeliver)
	if maxTries <= 0 {
		maxTries = api.DefaultMaxDeliver
	}
	keep := time.NewTicker(queueAckWait / 3)
	defer keep.Stop()
	ev, data := queueEvent(t, md, msg)
	if !function.PassesFilters(t.Spec.Filters, ev) {
		_ = msg.Ack() // not for this trigger: taken, and no call
		return
	}
	var last *api.FuncInstance
	for attempt := 1; attempt <= maxTries; attempt++ {
		inst, err := q.attempt(ctx, t, md.Sequence.Stream, attempt, data, ev, keep, msg)
		if err != nil {
			if ctx.Err() == nil {
				log.WithError(err).WithField("trigger", t.Name).Warn("funcrunner: a queue message's call failed to run")
				_ = msg.NakWithDelay(time.Second)
			}
			return // unsettled: the server hands it out again
		}
		if inst.Status.Phase == api.InstanceSucceeded {
			_ = msg.Ack()
			return
		}
		last = inst
	}
	if validation.SystemSubject(t.Spec.Queue.DeadLetterSubject) {
		// Stored before the apiserver refused such subjects: the
		// runner's connection must not carry a caller's message to NATS's API.
		log.WithField("trigger", t.Namespace+"/"+t.Name).Warn("funcrunner: not publishing a dead letter to a NATS system subject")
		_ = msg.Term()
		return
	}
	dead := nats.NewMsg(validation.DeadLetterFor(t.Spec.Queue.DeadLetterSubject, msg.Subject()))
	dead.Data = msg.Data()
	dead.Header.Set("Minik8s-Trigger", t.Namespace+"/"+t.Name)
	dead.Header.Set("Minik8s-Instance-Id", last.Name)
	dead.Header.Set("Minik8s-Error", last.Status.Error)
	dead.Header.Set("Minik8s-Attempts", strconv.Itoa(maxTries))
	if last.Status.Failure != nil {
		dead.Header.Set("Minik8s-Error-Type", last.Status.Failure.Type)
	}
	if err := q.nc.PublishMsg(dead); err != nil {
		_ = msg.NakWithDelay(time.Second)
		return
	}
	_ = msg.Term()
}

// attempt runs (or finds) attempt n of a message's call and waits for its end.
func (q *Queues) attempt(ctx context.Context, t *api.Trigger, seq uint64, n int, data []byte, ev *api.FuncEvent, keep *time.Ticker, msg jetstream.Msg) (*api.FuncInstance, error) {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%d/%d", t.UID, seq, n)))
	name := "msg-" + hex.EncodeToString(sum[:12])
	instances := q.client.FuncInstances(t.Namespace)
	inst := triggerCall(t, q.refs.ref(t), name, q.self, string(data), ev)
	if _, err := instances.Create(ctx, inst); err != nil && !errdefs.IsAlreadyExists(err) {
		return nil, err
	}
	// Woken when the instance ends; the poll only covers a missed wake.
	poll := time.NewTicker(time.Second)
	defer poll.Stop()
	defer q.ended.Forget(t.Namespace + "/" + name)
	for {
		woken := q.ended.Watch(t.Namespace + "/" + name)
		cur, err := instances.Get(ctx, name)
		if err == nil && call.Terminal(cur) {
			return cur, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-keep.C:
			_ = msg.InProgress()
		case <-woken:
		case <-poll.C:
		}
	}
}

// queueEvent is the event a message is: the CloudEvent it carries (binary
// mode in its headers, or structured), or one made of its data.
func queueEvent(t *api.Trigger, md *jetstream.MsgMetadata, msg jetstream.Msg) (*api.FuncEvent, []byte) {
	h := http.Header{}
	for k, vs := range msg.Headers() {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	plain := api.FuncEvent{ID: fmt.Sprintf("%s/%d", md.Stream, md.Sequence.Stream), Source: triggerSource(t),
		Type: function.EventTypeQueue, Subject: msg.Subject(), Time: md.Timestamp.UTC().Format(time.RFC3339Nano)}
	ev, data, err := function.ReadEvent(h, msg.Data(), plain)
	if err != nil {
		// Not a valid CloudEvent after all: the message is data.
		ev, data, _ = function.ReadEvent(http.Header{}, msg.Data(), plain)
	}
	ev.Topic = msg.Subject()
	return ev, data
}

// Publish sends data on subject (a function's output): stored by the
// subject's stream when there is one (JetStream's ack says so), else
// handed to the server for the subject's subscribers (a publish that
// asks for an ack would wait for one from them).
func (q *Queues) Publish(ctx context.Context, subject string, data []byte) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := q.js.StreamNameBySubject(ctx, subject)
	switch {
	case err == nil:
		_, err = q.js.Publish(ctx, subject, data)
		return err
	case errors.Is(err, jetstream.ErrStreamNotFound):
		if err := q.nc.Publish(subject, data); err != nil {
			return err
		}
		return q.nc.FlushWithContext(ctx)
	}
	return err
}
