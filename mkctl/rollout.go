package mkctl

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/owner"
	"minik8s/pkg/rollout"
	"minik8s/pkg/wait"
)

func newRolloutCommand(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout SUBCOMMAND deploy/NAME",
		Short: "Follow, list, undo, pause and resume the rollouts of a Deployment",
		Long: "Manage the rollout of a Deployment, as kubectl rollout does: status waits until it\n" +
			"is complete, history lists its revisions, undo goes back to the previous one (or\n" +
			"--to-revision), pause stops rolling changes of the template out, resume goes on.",
		Example: "  mkctl rollout status deploy/web\n  mkctl rollout history deploy/web\n  mkctl rollout undo deploy/web --to-revision=1",
	}
	var timeout time.Duration
	status := &cobra.Command{
		Use: "status deploy/NAME", Short: "Wait until the rollout is complete", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := deploymentArg(args[0])
			if err != nil {
				return usageError{cmd: cmd.CommandPath(), err: err}
			}
			return o.rolloutStatus(cmd.Context(), name, timeout)
		},
	}
	status.Flags().DurationVar(&timeout, "timeout", 0, "give up after this long (0: wait as long as it takes)")
	history := &cobra.Command{
		Use: "history deploy/NAME", Short: "List the revisions", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := deploymentArg(args[0])
			if err != nil {
				return usageError{cmd: cmd.CommandPath(), err: err}
			}
			return o.rolloutHistory(cmd.Context(), name)
		},
	}
	var toRevision int64
	undo := &cobra.Command{
		Use: "undo deploy/NAME", Short: "Roll back to the previous revision (or --to-revision)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := deploymentArg(args[0])
			if err != nil {
				return usageError{cmd: cmd.CommandPath(), err: err}
			}
			return o.rolloutUndo(cmd.Context(), name, toRevision)
		},
	}
	undo.Flags().Int64Var(&toRevision, "to-revision", 0, "the revision to go back to (0: the previous one)")
	cmd.AddCommand(status, history, undo, o.rolloutPauseCommand(true), o.rolloutPauseCommand(false))
	return cmd
}

func (o *Options) rolloutPauseCommand(pause bool) *cobra.Command {
	verb, done := "pause", "paused"
	if !pause {
		verb, done = "resume", "resumed"
	}
	return &cobra.Command{
		Use: verb + " deploy/NAME", Short: strings.ToUpper(verb[:1]) + verb[1:] + " the rollout of template changes", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := deploymentArg(args[0])
			if err != nil {
				return usageError{cmd: cmd.CommandPath(), err: err}
			}
			d, err := o.updateDeployment(cmd.Context(), name, func(d *api.Deployment) error {
				if d.Spec.Paused == pause {
					return fmt.Errorf("deployment.apps/%s is already %s", name, done)
				}
				d.Spec.Paused = pause
				return nil
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(o.Out, "deployment.apps/%s %s\n", d.Name, done)
			return nil
		},
	}
}

// deploymentArg reads "deploy/NAME" (or deployment/, deployments/).
func deploymentArg(arg string) (string, error) {
	kind, name, ok := strings.Cut(arg, "/")
	if res, found := api.LookupResource(kind); !ok || !found || res.Name != api.DeploymentsResource.Name || name == "" {
		return "", fmt.Errorf("%q is not deploy/NAME: rollouts are of Deployments", arg)
	}
	return name, nil
}

// updateDeployment changes a Deployment with edit, again on a conflict.
func (o *Options) updateDeployment(ctx context.Context, name string, edit func(*api.Deployment) error) (*api.Deployment, error) {
	deps := o.Client().Deployments(o.Namespace)
	for attempt := 1; ; attempt++ {
		d, err := deps.Get(ctx, name)
		if err != nil {
			return nil, err
		}
		if err := edit(d); err != nil {
			return nil, err
		}
		up, err := deps.Update(ctx, d)
		if errdefs.IsConflict(err) && attempt < maxApplyAttempts {
			continue
		}
		return up, err
	}
}

// rolloutState says where a rollout is, as kubectl rollout status words
// it; done when complete, an error when it failed.
func rolloutState(d *api.Deployment) (msg string, done bool, err error) {
	if d.Generation > d.Status.ObservedGeneration {
		return "Waiting for deployment spec update to be observed...", false, nil
	}
	for _, c := range d.Status.Conditions {
		if c.Type == api.DeploymentProgressing && c.Reason == api.ReasonProgressDeadlineExceeded {
			return "", false, fmt.Errorf("deployment %q exceeded its progress deadline", d.Name)
		}
	}
	want := int32(rollout.Replicas(d))
	st := d.Status
	switch {
	case st.UpdatedReplicas < want:
		return fmt.Sprintf("Waiting for deployment %q rollout to finish: %d out of %d new replicas have been updated...", d.Name, st.UpdatedReplicas, want), false, nil
	case st.Replicas > st.UpdatedReplicas:
		return fmt.Sprintf("Waiting for deployment %q rollout to finish: %d old replicas are pending termination...", d.Name, st.Replicas-st.UpdatedReplicas), false, nil
	case st.AvailableReplicas < st.UpdatedReplicas:
		return fmt.Sprintf("Waiting for deployment %q rollout to finish: %d of %d updated replicas are available...", d.Name, st.AvailableReplicas, st.UpdatedReplicas), false, nil
	}
	return fmt.Sprintf("deployment %q successfully rolled out", d.Name), true, nil
}

func (o *Options) rolloutStatus(ctx context.Context, name string, timeout time.Duration) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	deps := o.Client().Deployments(o.Namespace)
	last := ""
	for {
		d, err := deps.Get(ctx, name)
		if err != nil {
			return err
		}
		msg, done, err := rolloutState(d)
		if err != nil {
			return err
		}
		if msg != last {
			fmt.Fprintln(o.Out, msg)
			last = msg
		}
		if done {
			return nil
		}
		if !wait.Sleep(ctx, 500*time.Millisecond) {
			return fmt.Errorf("timed out waiting for the rollout of deployment %q: %w", name, ctx.Err())
		}
	}
}

// revisions are a Deployment's ReplicaSets by revision.
func (o *Options) revisions(ctx context.Context, d *api.Deployment) (map[int64]*api.ReplicaSet, error) {
	rss, _, err := o.Client().ReplicaSets(d.Namespace).List(ctx, client.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[int64]*api.ReplicaSet{}
	for _, rs := range rss {
		if owner.IsControlledBy(&rs.ObjectMeta, d.UID) {
			out[rollout.Revision(rs)] = rs
		}
	}
	return out, nil
}

func (o *Options) rolloutHistory(ctx context.Context, name string) error {
	d, err := o.Client().Deployments(o.Namespace).Get(ctx, name)
	if err != nil {
		return err
	}
	revs, err := o.revisions(ctx, d)
	if err != nil {
		return err
	}
	nums := make([]int64, 0, len(revs))
	for n := range revs {
		nums = append(nums, n)
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
	fmt.Fprintf(o.Out, "deployment.apps/%s\n", name)
	tw := tabwriter.NewWriter(o.Out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "REVISION\tCHANGE-CAUSE")
	for _, n := range nums {
		cause := revs[n].Annotations[api.AnnotationChangeCause]
		if cause == "" {
			cause = "<none>"
		}
		fmt.Fprintf(tw, "%d\t%s\n", n, cause)
	}
	return tw.Flush()
}

// rolloutUndo puts the template of an earlier revision back (the previous
// one, or toRevision): the controller rolls it out as the newest revision.
func (o *Options) rolloutUndo(ctx context.Context, name string, toRevision int64) error {
	var target int64
	_, err := o.updateDeployment(ctx, name, func(d *api.Deployment) error {
		if d.Spec.Paused {
			return fmt.Errorf("deployment.apps/%s is paused: resume it before rolling back", name)
		}
		revs, err := o.revisions(ctx, d)
		if err != nil {
			return err
		}
		current := int64(0)
		for n, rs := range revs {
			if rs.Labels[api.LabelPodTemplateHash] == rollout.Hash(d) {
				current = n
			}
		}
		target = toRevision
		if target == 0 {
			for n := range revs {
				if n != current && n > target {
					target = n
				}
			}
		}
		rs, ok := revs[target]
		if !ok || target == 0 {
			return fmt.Errorf("deployment.apps/%s has no revision %s to roll back to", name, strconv.FormatInt(target, 10))
		}
		tmpl := rs.Spec.Template
		tmpl.Labels = maps.Clone(tmpl.Labels)
		delete(tmpl.Labels, api.LabelPodTemplateHash)
		d.Spec.Template = tmpl
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "deployment.apps/%s rolled back to revision %d\n", name, target)
	return nil
}
