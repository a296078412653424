package trigger

import (
	"maps"

	"minik8s/pkg/api"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/function"
	"minik8s/pkg/function/call"
)

// Refs makes the reference a call records to the trigger that made
// it, with the config of the trigger's app merged with the trigger's own.
type Refs struct {
	// Apps finds a trigger's app (nil: no app config).
	Apps *cache.Lister[api.App, *api.App]
}

func (r Refs) ref(t *api.Trigger) *api.FuncTriggerRef {
	kind, _ := function.TriggerSource(t)
	ref := &api.FuncTriggerRef{Name: t.Name, Type: kind, App: t.Spec.App}
	if t.Spec.Schedule != nil {
		ref.Schedule = t.Spec.Schedule.Cron
	}
	var cfg map[string]string
	if t.Spec.App != "" && r.Apps != nil {
		if app, ok := r.Apps.Get(t.Namespace, t.Spec.App); ok {
			cfg = maps.Clone(app.Spec.Config)
		}
	}
	if len(t.Spec.Config) > 0 {
		if cfg == nil {
			cfg = map[string]string{}
		}
		maps.Copy(cfg, t.Spec.Config)
	}
	ref.Config = cfg
	return ref
}

// triggerSource is the CloudEvents source of the events a trigger makes:
// the trigger's path in the API.
func triggerSource(t *api.Trigger) string {
	return "/api/v1/namespaces/" + t.Namespace + "/triggers/" + t.Name
}

// triggerCall is the asynchronous call a trigger makes, recording the
// trigger, its event and the runner that made it. It is stored claimed by
// that runner, which drives it (no claim to write, no other runner to
// wait for); if the runner dies, another takes it over as any instance.
func triggerCall(t *api.Trigger, ref *api.FuncTriggerRef, name, runner, arg string, ev *api.FuncEvent) *api.FuncInstance {
	req := function.CallRequest{Namespace: t.Namespace, Function: t.Spec.Function, ID: name, Arg: []byte(arg), Event: ev, Trigger: ref}
	return call.New(req, call.Origin{User: runner, Runner: runner})
}
