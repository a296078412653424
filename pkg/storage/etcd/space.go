package etcd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	log "github.com/sirupsen/logrus"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// DefaultSpaceCheckInterval is how often the apiserver reads etcd's alarms
// and database size (a local Status call per member, no raft round).
const DefaultSpaceCheckInterval = 5 * time.Second

// AlarmNoSpace is the alarm etcd raises when its database reaches its
// quota: from then on it refuses every write but deletes and compaction,
// until the alarm is disarmed.
const AlarmNoSpace = "NOSPACE"

// Alarms are the alarms etcd has raised, as last seen.
type Alarms struct {
	// Names as etcd names them ("NOSPACE", "CORRUPT"), sorted.
	Names []string
	// DBSize and Quota: the largest member database and its quota, in
	// bytes (0 when not read yet).
	DBSize, Quota int64
}

// String names the alarms for a health check.
func (a Alarms) String() string {
	var parts []string
	for _, n := range a.Names {
		s := "etcd raised its " + n + " alarm"
		if n == AlarmNoSpace {
			s += fmt.Sprintf(" (database of %d bytes, quota %d): writes are refused until objects are deleted; "+
				"then the apiserver compacts, defragments and disarms it", a.DBSize, a.Quota)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// Alarms are etcd's raised alarms as the space check last saw them (a
// write refused for space counts at once).
func (s *Store) Alarms() Alarms {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.alarms
	a.Names = slices.Clone(a.Names)
	return a
}

func isNoSpace(err error) bool {
	return errors.Is(err, rpctypes.ErrNoSpace) || errors.Is(err, rpctypes.ErrGRPCNoSpace)
}

// noteWriteErr records a write refused for space, so health says so at
// once and the space check runs now rather than at its next tick.
func (s *Store) noteWriteErr(err error) {
	if !isNoSpace(err) {
		return
	}
	s.mu.Lock()
	if !slices.Contains(s.alarms.Names, AlarmNoSpace) {
		s.alarms.Names = append(s.alarms.Names, AlarmNoSpace)
		slices.Sort(s.alarms.Names)
	}
	s.mu.Unlock()
	select {
	case s.spaceCheck <- struct{}{}:
	default:
	}
}

// RunSpaceRecovery reads etcd's alarms every interval until ctx ends, and
// while etcd is out of space does what etcd's operators do once space is
// freed (objects deleted): compact the history to the current revision,
// defragment every member so the file shrinks, and disarm the alarm, so
// that writes come back on their own. A quota still filled by live objects
// stays alarmed: health says so (/readyz) and writes answer etcd's "database
// space exceeded".
func (s *Store) RunSpaceRecovery(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		s.checkSpace(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.spaceCheck:
		}
	}
}

// spaceStatus reads every member's status: raised alarms, the largest
// database (file and in use) and the smallest quota.
func (s *Store) spaceStatus(ctx context.Context) (a Alarms, inUse int64, err error) {
	seen := map[string]bool{}
	for _, ep := range s.client.Endpoints() {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		st, serr := s.client.Status(sctx, ep)
		cancel()
		if serr != nil {
			err = serr
			continue
		}
		for _, e := range st.Errors {
			if _, name, ok := strings.Cut(e, "alarm:"); ok {
				if name = strings.TrimSpace(name); name != "" && !seen[name] {
					seen[name] = true
					a.Names = append(a.Names, name)
				}
			}
		}
		a.DBSize, inUse = max(a.DBSize, st.DbSize), max(inUse, st.DbSizeInUse)
		if a.Quota == 0 || st.DbSizeQuota < a.Quota {
			a.Quota = st.DbSizeQuota
		}
	}
	slices.Sort(a.Names)
	return a, inUse, err
}

// roomy says a database of size bytes leaves room under quota for writes
// to go on: disarming a member still at its quota would only have the
// next write raise the alarm again.
func roomy(size, quota int64) bool { return quota > 0 && size < quota/10*9 }

func (s *Store) checkSpace(ctx context.Context) {
	a, inUse, err := s.spaceStatus(ctx)
	if err != nil && a.Quota == 0 {
		return // no member answered: the store's own errors say why
	}
	s.mu.Lock()
	s.alarms = a
	s.mu.Unlock()
	if !slices.Contains(a.Names, AlarmNoSpace) {
		return
	}
	if rev, err := s.Revision(ctx); err == nil {
		// Physical: the freed pages are reusable (and defragmentable)
		// once it returns.
		if _, err := s.kv.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
			log.WithError(err).Warn("etcd is out of space: compacting failed")
			return
		}
		if a, inUse, err = s.spaceStatus(ctx); err != nil {
			return
		}
	}
	if !roomy(inUse, a.Quota) {
		log.WithFields(log.Fields{"inUse": inUse, "quota": a.Quota}).Warn("etcd is out of space: delete objects to free some; writes are refused until then")
		return
	}
	if !roomy(a.DBSize, a.Quota) {
		for _, ep := range s.client.Endpoints() {
			if _, err := s.client.Defragment(ctx, ep); err != nil {
				log.WithError(err).WithField("endpoint", ep).Warn("etcd is out of space: defragmenting failed")
				return
			}
		}
		if a, _, err = s.spaceStatus(ctx); err != nil || !roomy(a.DBSize, a.Quota) {
			return
		}
	}
	if err := s.disarmNoSpace(ctx); err != nil {
		log.WithError(err).Warn("etcd has space again, but disarming its NOSPACE alarm failed")
		return
	}
	log.WithFields(log.Fields{"dbSize": a.DBSize, "quota": a.Quota}).Info("etcd has space again: NOSPACE alarm disarmed, writes are taken")
	a.Names = slices.DeleteFunc(a.Names, func(n string) bool { return n == AlarmNoSpace })
	s.mu.Lock()
	s.alarms = a
	s.mu.Unlock()
}

func (s *Store) disarmNoSpace(ctx context.Context) error {
	resp, err := s.client.AlarmList(ctx)
	if err != nil {
		return err
	}
	for _, m := range resp.Alarms {
		if m.Alarm != pb.AlarmType_NOSPACE {
			continue
		}
		if _, err := s.client.AlarmDisarm(ctx, &clientv3.AlarmMember{MemberID: m.MemberID, Alarm: m.Alarm}); err != nil {
			return err
		}
	}
	return nil
}
