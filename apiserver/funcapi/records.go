package funcapi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
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

// itemCauses names item i of a list in each cause of its refusal.
func itemCauses(i int, io *errdefs.InvalidObject) error {
	out := *io
	out.Causes = make([]errdefs.Cause, len(io.Causes))
	prefix := fmt.Sprintf("items[%d]", i)
	for j, c := range io.Causes {
		c.Message = strings.Replace(c.Message, c.Field, prefix+"."+c.Field, 1)
		c.Field = prefix + "." + c.Field
		out.Causes[j] = c
	}
	out.Message = prefix + ": " + io.Message
	return &out
}

// AcceptRecords queues the records of ended calls of namespace ns (a
// gateway's) for the batch writer, after passing each through the checks
// a single create makes (on a copy: the store prepares the record
// itself), and the namespace through admission, so that a list is taken
// whole or refused naming the item, and never half-stored after the 202.
func (c *Calls) AcceptRecords(ctx context.Context, ns string, items []api.FuncInstance) error {
	if err := c.checkRecords(ctx, ns, items); err != nil {
		return err
	}
	for i := range items {
		inst := &items[i]
		inst.Namespace = ns
		c.records.Add(ctx, inst)
	}
	return nil
}

func (c *Calls) checkRecords(ctx context.Context, ns string, items []api.FuncInstance) error {
	reg := c.instances
	if reg.Namespaces != nil {
		if err := reg.Namespaces.Admit(ctx, ns); err != nil {
			return err
		}
	}
	for i := range items {
		probe := registry.CopyObject(reg.Resource, &items[i])
		probe.GetObjectMeta().Namespace = ns
		if err := reg.PrepareCreate(ctx, ns, probe); err != nil {
			if io, ok := errdefs.AsInvalidObject(err); ok {
				return itemCauses(i, io)
			}
			var fe *errdefs.FieldError
			if errors.As(err, &fe) && fe.Field != "" {
				return &errdefs.FieldError{Class: fe.Class, Field: fmt.Sprintf("items[%d].%s", i, fe.Field), Reason: fe.Reason}
			}
			return fmt.Errorf("items[%d]: %w", i, err)
		}
	}
	return nil
}
