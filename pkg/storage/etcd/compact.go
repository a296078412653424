package etcd

import (
	"context"
	"errors"
	"time"

	log "github.com/sirupsen/logrus"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// DefaultCompactInterval is how much history the apiserver keeps: watches
// resume from any revision younger than this; older ones relist. Call
// records churn fast, so history, not live data, is what would grow etcd's
// database; compacting often keeps it within a bound whatever the call rate.
const DefaultCompactInterval = time.Minute

// RunCompactor compacts etcd's history every interval, keeping at least an
// interval of it, until ctx ends, as kube-apiserver does. Several
// apiservers on one etcd may all run it: a compaction already done is no
// error.
func (s *Store) RunCompactor(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var last int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rev, err := s.Revision(ctx)
		if err != nil {
			continue
		}
		if last > 0 {
			if _, err := s.kv.Compact(ctx, last); err != nil && !errors.Is(err, rpctypes.ErrCompacted) && ctx.Err() == nil {
				log.WithError(err).WithField("revision", last).Warn("etcd compaction failed")
			}
		}
		last = rev
	}
}
