package mkctl

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/spf13/cobra"

	"minik8s/pkg/api"
	"minik8s/pkg/api/validation"
	"minik8s/pkg/errdefs"
)

func newApplyCommand(o *Options) *cobra.Command {
	var files []string
	cmd := &cobra.Command{
		Use:   "apply -f FILE|DIR|-",
		Short: "Create or update objects from manifests",
		Long: "Create the objects of YAML or JSON manifests, or update those that exist.\n" +
			"A file may hold several documents separated by '---'; a directory applies its\n" +
			"*.yaml, *.yml and *.json files in sorted order; '-' reads stdin.\n" +
			"Func manifests may give spec.function and spec.preRun as plain text: mkctl encodes them.",
		Example: "  mkctl apply -f yaml/\n  mkctl apply -f yaml/pod.yaml\n  cat func.yaml | mkctl apply -f -",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{cmd: cmd.CommandPath(), err: fmt.Errorf("unexpected arguments %q: manifests are given with -f", args)}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 {
				return usageError{cmd: cmd.CommandPath(), err: fmt.Errorf("must give a manifest with -f")}
			}
			return o.eachDocument(files, func(d Document) error {
				msg, err := o.applyOne(cmd.Context(), d)
				if err == nil {
					fmt.Fprintln(o.Out, msg)
				}
				return err
			})
		},
	}
	cmd.Flags().StringSliceVarP(&files, "filename", "f", nil, "manifest file, directory or - (may repeat)")
	return cmd
}

// eachDocument runs do on every document of the manifests, going on past
// the ones that fail: each failure is printed, and the command then fails
// (errReported), as kubectl apply and create do.
func (o *Options) eachDocument(files []string, do func(Document) error) error {
	docs, err := ReadManifests(files, o.In)
	if err != nil {
		return err
	}
	failed := false
	for _, d := range docs {
		if err := do(d); err != nil {
			fmt.Fprintln(o.ErrOut, FormatError(err))
			failed = true
		}
	}
	if failed {
		return errReported
	}
	return nil
}

// setNamespace puts a document's object in its namespace: the one it names,
// else -n. Naming one and asking for another with -n is a mistake.
func (o *Options) setNamespace(d Document) error {
	meta := d.Object.GetObjectMeta()
	if !d.Resource.Namespaced {
		meta.Namespace = ""
		return nil
	}
	if meta.Namespace == "" {
		meta.Namespace = o.Namespace
		return nil
	}
	if o.NamespaceSet && meta.Namespace != o.Namespace {
		return fmt.Errorf("%s: the namespace of the object %q does not match --namespace %q", d.where(), meta.Namespace, o.Namespace)
	}
	return nil
}

// maxApplyAttempts bounds retries of an update that lost a race.
const maxApplyAttempts = 3

// applyOne creates the document's object or brings the stored one in line
// with it, and says which it did, as kubectl does.
func (o *Options) applyOne(ctx context.Context, d Document) (string, error) {
	if err := o.setNamespace(d); err != nil {
		return "", err
	}
	meta := d.Object.GetObjectMeta()
	dyn := o.Client().Resource(d.Resource, meta.Namespace)
	id := kindName(d.Resource, meta.Name)
	for attempt := 1; ; attempt++ {
		cur, err := dyn.Get(ctx, meta.Name)
		if errdefs.IsNotFound(err) {
			if _, err := dyn.Create(ctx, d.Object); err != nil {
				if errdefs.IsAlreadyExists(err) && attempt < maxApplyAttempts {
					continue
				}
				return "", wrapOp(err, "creating", d)
			}
			return id + " created", nil
		}
		if err != nil {
			return "", wrapOp(err, "reading", d)
		}
		desired, err := desiredState(d.Resource, d.Object, cur)
		if err != nil {
			return "", err
		}
		if sameForApply(desired, cur) {
			return id + " unchanged", nil
		}
		desired.GetObjectMeta().ResourceVersion = cur.GetObjectMeta().ResourceVersion
		if _, err := dyn.Update(ctx, desired); err != nil {
			if errdefs.IsConflict(err) && attempt < maxApplyAttempts {
				continue
			}
			return "", wrapOp(err, "updating", d)
		}
		return id + " configured", nil
	}
}

// wrapOp adds the object and file to an error answer, the way kubectl
// reports a failed apply.
func wrapOp(err error, verb string, d Document) error {
	meta := d.Object.GetObjectMeta()
	ctx := fmt.Sprintf("error when %s %q: ", verb, d.Source)
	// The apiserver's message names the object (`Pod "web" is invalid:
	// ...`), as Kubernetes' does; a refusal of its own may not.
	if errdefs.IsInvalid(err) && !strings.Contains(err.Error(), " is invalid: ") {
		ctx += fmt.Sprintf("%s %q is invalid: ", d.Resource.Kind, meta.Name)
	}
	return &opError{context: ctx, err: err}
}

// desiredState is the manifest's object as the apiserver would store it
// over cur: defaulted, and keeping what the system set on cur that the
// manifest leaves out (a pod's node, a service's cluster IP, a node's pod
// CIDR, owners).
func desiredState(res api.Resource, manifest, cur api.Object) (api.Object, error) {
	desired := res.New()
	data, err := json.Marshal(manifest)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, desired); err != nil {
		return nil, err
	}
	dm, cm := desired.GetObjectMeta(), cur.GetObjectMeta()
	if dm.OwnerReferences == nil {
		dm.OwnerReferences = cm.OwnerReferences
	}
	switch d := desired.(type) {
	case *api.Pod:
		c := cur.(*api.Pod)
		if d.Spec.NodeName == "" {
			d.Spec.NodeName = c.Spec.NodeName
		}
		// The service account the server gave it, as the server keeps it.
		if d.Spec.ServiceAccountName == "" && d.Spec.ServiceAccount == "" {
			d.Spec.ServiceAccountName, d.Spec.ServiceAccount = c.Spec.ServiceAccountName, c.Spec.ServiceAccount
		}
		// The priority the server's admission gave it, likewise.
		if d.Spec.Priority == nil {
			d.Spec.Priority, d.Spec.PreemptionPolicy = c.Spec.Priority, c.Spec.PreemptionPolicy
		}
		if d.Spec.PriorityClassName == "" {
			d.Spec.PriorityClassName = c.Spec.PriorityClassName
		}
	case *api.Service:
		c := cur.(*api.Service)
		if d.Spec.ClusterIP == "" && len(d.Spec.ClusterIPs) == 0 {
			d.Spec.ClusterIP, d.Spec.ClusterIPs = c.Spec.ClusterIP, c.Spec.ClusterIPs
		}
		// Node ports the server allocated stay, by port, as it keeps them.
		for i := range d.Spec.Ports {
			for _, cp := range c.Spec.Ports {
				if d.Spec.Ports[i].NodePort == 0 && cp.Port == d.Spec.Ports[i].Port && cp.Name == d.Spec.Ports[i].Name {
					d.Spec.Ports[i].NodePort = cp.NodePort
				}
			}
		}
	case *api.Node:
		if c := cur.(*api.Node); d.Spec.PodCIDR == "" && len(d.Spec.PodCIDRs) == 0 {
			d.Spec.PodCIDR, d.Spec.PodCIDRs = c.Spec.PodCIDR, c.Spec.PodCIDRs
		}
	case *api.Func:
		if c := cur.(*api.Func); d.Spec.ServiceAddress == "" {
			d.Spec.ServiceAddress = c.Spec.ServiceAddress
		}
	case *api.Job:
		validation.KeepJobSelector(cur.(*api.Job), d)
	case *api.DaemonSet:
		// The template generation the server counts, as it keeps it.
		if g, ok := cur.(*api.DaemonSet).Annotations[api.AnnotationDaemonSetTemplateGeneration]; ok {
			if d.Annotations == nil {
				d.Annotations = map[string]string{}
			}
			if _, set := d.Annotations[api.AnnotationDaemonSetTemplateGeneration]; !set {
				d.Annotations[api.AnnotationDaemonSetTemplateGeneration] = g
			}
		}
	}
	validation.Default(res, desired)
	return desired, nil
}

// sameForApply compares what a user writes: metadata they own and
// everything but status.
func sameForApply(desired, cur api.Object) bool {
	a, err1 := userView(desired)
	b, err2 := userView(cur)
	return err1 == nil && err2 == nil && reflect.DeepEqual(a, b)
}

// systemMeta are the metadata fields only the apiserver writes (a
// manifest never carries managedFields: the server records them).
var systemMeta = []string{"uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields"}

func userView(obj api.Object) (map[string]any, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	if meta, ok := m["metadata"].(map[string]any); ok {
		for _, k := range systemMeta {
			delete(meta, k)
		}
	}
	return m, nil
}
