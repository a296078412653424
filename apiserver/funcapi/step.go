package funcapi

import (
	"context"
	"fmt"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function/call"
)

// Step is the reference design's internal step call on instance ns/id:
// run function name with arg as the call's next step and go on from
// there; RETURN stores arg as the result. The instance's runner follows
// the new cursor: a step it was running meanwhile is not recorded (its
// write finds the instance changed). owns, when set, refuses an instance
// the caller may not change (it may see only its own).
func (c *Calls) Step(ctx context.Context, ns, id, name string, arg []byte, owns func(*api.FuncInstance) error) (*api.FuncInstance, error) {
	if err := call.CheckArg(len(arg)); err != nil {
		return nil, err
	}
	if name != api.FuncReturn {
		if _, err := c.funcs.Get(ctx, ns, name); err != nil {
			return nil, err
		}
	}
	if owns != nil {
		inst, err := c.Get(ctx, ns, id)
		if err == nil {
			err = owns(inst)
		}
		if err != nil {
			return nil, err
		}
	}
	if _, pending := c.records.Get(ns, id); pending {
		return nil, fmt.Errorf("function instance %q has ended: a finished instance cannot be changed: %w", id, errdefs.ErrConflict)
	}
	obj, err := c.instances.Mutate(ctx, ns, id, func(o api.Object) (api.Object, error) {
		inst := o.(*api.FuncInstance)
		if owns != nil {
			if err := owns(inst); err != nil {
				return nil, err
			}
		}
		if err := call.Goto(inst, name, string(arg)); err != nil {
			return nil, err
		}
		return inst, nil
	})
	if err != nil {
		if errdefs.IsNotFound(err) {
			err = fmt.Errorf("function instance %q not found: %w", id, errdefs.ErrNotFound)
		}
		return nil, err
	}
	return obj.(*api.FuncInstance), nil
}
