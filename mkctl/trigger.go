package mkctl

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/printers"
	"minik8s/pkg/wait"
)

func newTriggerCommand(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "trigger",
		Aliases: []string{"triggers", "tr"},
		Short:   "Add, list and remove the triggers that call functions",
		Long: "A trigger calls a function: an HTTP route on the function gateway, a cron schedule, or a\n" +
			"NATS subject. A function has any number of triggers, added and removed while it runs.",
		Example: "  mkctl trigger add http hello-web --function hello --path /hello --method POST\n" +
			"  curl -d world 127.0.0.1:8081/hello\n" +
			"  mkctl trigger ls\n  mkctl trigger rm hello-web",
	}
	add := &cobra.Command{Use: "add KIND NAME --function F ...", Short: "Add a trigger (http, schedule or queue)",
		// A kind that is not one is named as such, not as a flag the
		// parent does not know (mkctl trigger add kafka t --function f).
		FParseErrWhitelist: cobra.FParseErrWhitelist{UnknownFlags: true},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			return usageError{cmd: cmd.CommandPath(), err: fmt.Errorf("unknown trigger kind %q: want http, schedule or queue", args[0])}
		}}
	add.AddCommand(newTriggerAddCommand(o, api.TriggerHTTP), newTriggerAddCommand(o, api.TriggerSchedule), newTriggerAddCommand(o, api.TriggerQueue))
	cmd.AddCommand(add, newTriggerListCommand(o), newTriggerRemoveCommand(o))
	return cmd
}

// triggerFlags are what `trigger add` takes for each type.
type triggerFlags struct {
	function, path, cron, timeZone, subject, deadLetter, app string
	methods                                                  []string
	config, exact, prefix                                    map[string]string
	maxDeliver                                               int32
	wait                                                     time.Duration
}

func (f *triggerFlags) spec(kind string) api.TriggerSpec {
	s := api.TriggerSpec{Function: f.function, App: f.app, Config: f.config}
	if len(f.exact) > 0 {
		s.Filters = append(s.Filters, api.TriggerFilter{Exact: f.exact})
	}
	if len(f.prefix) > 0 {
		s.Filters = append(s.Filters, api.TriggerFilter{Prefix: f.prefix})
	}
	switch kind {
	case api.TriggerHTTP:
		s.HTTP = &api.HTTPTrigger{Path: f.path, Methods: f.methods}
	case api.TriggerSchedule:
		s.Schedule = &api.ScheduleTrigger{Cron: f.cron, TimeZone: f.timeZone}
	case api.TriggerQueue:
		s.Queue = &api.QueueTrigger{Subject: f.subject, MaxDeliver: f.maxDeliver, DeadLetterSubject: f.deadLetter}
	}
	return s
}

func newTriggerAddCommand(o *Options, kind string) *cobra.Command {
	var f triggerFlags
	use := map[string]string{
		api.TriggerHTTP:     "http NAME --function F --path /PATH [--method M]...",
		api.TriggerSchedule: "schedule NAME --function F --cron EXPR [--timezone TZ]",
		api.TriggerQueue:    "queue NAME --function F --subject S [--max-deliver N] [--dead-letter S]",
	}[kind]
	cmd := &cobra.Command{
		Use:   use,
		Short: "Add a " + kind + " trigger; waits until it is ready (--wait 0: does not)",
		Args:  oneArg("trigger name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			t := &api.Trigger{TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: "Trigger"},
				ObjectMeta: api.ObjectMeta{Name: args[0], Namespace: o.Namespace}, Spec: f.spec(kind)}
			triggers := o.Client().Triggers(o.Namespace)
			if _, err := triggers.Create(cmd.Context(), t); err != nil {
				return &opError{context: fmt.Sprintf("adding trigger %q: ", args[0]), err: err}
			}
			if f.wait > 0 {
				if err := waitTriggerReady(cmd.Context(), triggers, args[0], f.wait); err != nil {
					return err
				}
			}
			fmt.Fprintf(o.Out, "trigger/%s added\n", args[0])
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.function, "function", "", "the function to call")
	fl.DurationVar(&f.wait, "wait", time.Minute, "how long to wait for the trigger to be ready (0: do not wait)")
	fl.StringVar(&f.app, "app", "", "the app the trigger belongs to: its config reaches the function as context[\"config\"]")
	fl.StringToStringVar(&f.config, "config", nil, "config of this trigger, KEY=VALUE (repeat or comma-separate; wins over the app's)")
	fl.StringToStringVar(&f.exact, "filter", nil, "call only for events whose CloudEvents ATTRIBUTE=VALUE, e.g. type=com.shop.order (repeat: all must match)")
	fl.StringToStringVar(&f.prefix, "filter-prefix", nil, "call only for events whose ATTRIBUTE starts with VALUE, e.g. source=/shop (repeat: all must match)")
	switch kind {
	case api.TriggerHTTP:
		fl.StringVar(&f.path, "path", "", "path on the function gateway, e.g. /hello")
		fl.StringArrayVar(&f.methods, "method", nil, "HTTP method the route takes (repeat for more; default every method)")
	case api.TriggerSchedule:
		fl.StringVar(&f.cron, "cron", "", `cron expression: "*/5 * * * *", seconds optional, or "@every 1s", "@hourly"`)
		fl.StringVar(&f.timeZone, "timezone", "", "IANA time zone of the expression (default UTC)")
	case api.TriggerQueue:
		fl.StringVar(&f.subject, "subject", "", "NATS subject whose messages call the function")
		fl.Int32Var(&f.maxDeliver, "max-deliver", 0, "deliveries of a message whose call fails before it is dead-lettered (default 5)")
		fl.StringVar(&f.deadLetter, "dead-letter", "", "subject failed messages go to (default deadletter.SUBJECT)")
	}
	return cmd
}

// waitTriggerReady polls the trigger until its server marks it ready.
func waitTriggerReady(ctx context.Context, triggers *client.ResourceClient[api.Trigger, *api.Trigger], name string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		t, err := triggers.Get(ctx, name)
		if err != nil {
			return &opError{context: fmt.Sprintf("waiting for trigger %q: ", name), err: err}
		}
		if t.Status.Ready {
			return nil
		}
		if time.Now().After(deadline) {
			why := t.Status.Message
			if why == "" {
				why = "no component has taken it up (is a function runner with the gateway, or the " + kindOf(t) + " firer, running?)"
			}
			return fmt.Errorf("trigger %q is stored but not ready after %s: %s", name, within, why)
		}
		if !wait.Sleep(ctx, 200*time.Millisecond) {
			return ctx.Err()
		}
	}
}

func kindOf(t *api.Trigger) string {
	kind, _ := printers.TriggerSource(t)
	return kind
}

func newTriggerListCommand(o *Options) *cobra.Command {
	return &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the triggers of the namespace",
		RunE: func(cmd *cobra.Command, _ []string) error {
			list, _, err := o.Client().Triggers(o.Namespace).List(cmd.Context(), client.ListOptions{})
			if err != nil {
				return &opError{context: "listing triggers: ", err: err}
			}
			objs := make([]api.Object, 0, len(list))
			for _, t := range list {
				objs = append(objs, t)
			}
			return NewTablePrinter(api.TriggersResource, false, false, false).PrintTable(o.Out, objs, time.Now())
		},
	}
}

func newTriggerRemoveCommand(o *Options) *cobra.Command {
	return &cobra.Command{
		Use:     "rm NAME",
		Aliases: []string{"remove", "delete"},
		Short:   "Remove a trigger",
		Args:    oneArg("trigger name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := o.Client().Triggers(o.Namespace).Delete(cmd.Context(), args[0], client.DeleteOptions{}); err != nil {
				return &opError{context: fmt.Sprintf("removing trigger %q: ", args[0]), err: err}
			}
			fmt.Fprintf(o.Out, "trigger/%s removed\n", args[0])
			return nil
		},
	}
}
