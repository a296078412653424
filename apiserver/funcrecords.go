package apiserver

import (
	"context"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
	"minik8s/pkg/function/call"
)

// recordStore stores the records of synchronous calls (call.Records
// batches them) straight into the registry: etcd commits a batch in one
// transaction.
type recordStore struct{ instances *registry.Store }

// recordBatchBytes bounds a batch's data, roughly (etcd's default limit on
// one request is 1.5 MiB).
const recordBatchBytes = 1 << 20

func newRecords(instances *registry.Store) *call.Records {
	return call.NewRecords(recordStore{instances}, call.RecordOptions{Workers: 2, BatchBytes: recordBatchBytes, Linger: 10 * time.Millisecond})
}

func (s recordStore) CreateMany(ctx context.Context, batch []*api.FuncInstance) error {
	objs := make([]api.Object, len(batch))
	for i, inst := range batch {
		objs[i] = writable(inst)
	}
	errs, err := s.instances.CreateMany(ctx, objs)
	if err != nil {
		return err
	}
	for i, e := range errs {
		if e != nil {
			log.WithError(e).WithField("instance", batch[i].Name).Warn("function call: the record of a synchronous call is not valid; not stored")
		}
	}
	return nil
}

func (s recordStore) Create(ctx context.Context, inst *api.FuncInstance) error {
	_, err := s.instances.Create(ctx, inst.Namespace, writable(inst))
	return err
}

// writable is a copy of a pending record for the store to set the
// metadata of, while GET may read the record itself: creating sets only
// top-level fields of metadata and status.
func writable(inst *api.FuncInstance) *api.FuncInstance {
	c := *inst
	return &c
}
