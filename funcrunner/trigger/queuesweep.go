package trigger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api/validation"
	"minik8s/pkg/client"
)

// Removing a queue trigger (or its namespace, or its function) must not
// leave its durable consumer, nor a stream no trigger reads, behind: the
// stream keeps every message published to its subject for ever. Each
// runner sweeps them: when it stops consuming a removed trigger, every
// queueSweepEvery, and once at start (a trigger may have gone while no runner
// ran).
const (
	streamPrefix    = "MINIK8S_"
	consumerPrefix  = "trigger-"
	queueSweepEvery = time.Minute
)

// sweep deletes the consumers of triggers that no longer exist, then the
// streams left without consumers whose subjects no trigger takes. What
// exists is read from the apiserver after the consumers are listed, not
// from this runner's cache, which may not yet hold a trigger another
// runner made a consumer for: a consumer is only made for a stored
// trigger, and a trigger's uid never comes back, so one absent from the
// later read is gone for good.
func (q *Queues) sweep(ctx context.Context) error {
	type stream struct {
		name      string
		subjects  []string
		consumers []string
	}
	var streams []stream
	names := q.js.StreamNames(ctx)
	for name := range names.Name() {
		if strings.HasPrefix(name, streamPrefix) {
			streams = append(streams, stream{name: name})
		}
	}
	if err := names.Err(); err != nil {
		return fmt.Errorf("listing streams: %w", err)
	}
	for i := range streams {
		s, err := q.js.Stream(ctx, streams[i].name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("stream %s: %w", streams[i].name, err)
		}
		streams[i].subjects = s.CachedInfo().Config.Subjects
		cons := s.ConsumerNames(ctx)
		for c := range cons.Name() {
			streams[i].consumers = append(streams[i].consumers, c)
		}
		if err := cons.Err(); err != nil {
			return fmt.Errorf("listing the consumers of stream %s: %w", streams[i].name, err)
		}
	}
	if len(streams) == 0 {
		return nil
	}
	triggers, _, err := q.client.Triggers("").List(ctx, client.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing triggers: %w", err)
	}
	uids := map[string]bool{}
	var subjects []string
	for _, t := range triggers {
		uids[t.UID] = true
		if t.Spec.Queue != nil {
			subjects = append(subjects, t.Spec.Queue.Subject)
		}
	}
	// A stream is wanted while a trigger takes subjects it keeps (triggers
	// share the stream whose subject covers theirs).
	wanted := func(s stream) bool {
		for _, sub := range subjects {
			for _, ss := range s.subjects {
				if validation.SubjectsCollide(sub, ss) {
					return true
				}
			}
		}
		return false
	}
	var errs []error
	for _, s := range streams {
		left := 0
		for _, c := range s.consumers {
			uid, ours := strings.CutPrefix(c, consumerPrefix)
			if !ours || uids[uid] {
				left++
				continue
			}
			if err := q.js.DeleteConsumer(ctx, s.name, c); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
				errs = append(errs, fmt.Errorf("deleting consumer %s of stream %s: %w", c, s.name, err))
				left++
				continue
			}
			log.WithFields(log.Fields{"stream": s.name, "consumer": c}).Info("funcrunner: deleted the consumer of a removed queue trigger")
		}
		if left > 0 || wanted(s) {
			continue
		}
		if err := q.js.DeleteStream(ctx, s.name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			errs = append(errs, fmt.Errorf("deleting stream %s: %w", s.name, err))
			continue
		}
		log.WithField("stream", s.name).Info("funcrunner: deleted a stream no queue trigger reads")
	}
	return errors.Join(errs...)
}
