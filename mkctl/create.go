package mkctl

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"minik8s/pkg/api"
)

// newCreateCommand is kubectl create: objects of manifests (never an
// update), or a namespace, configmap or secret from the command line.
func newCreateCommand(o *Options) *cobra.Command {
	var files []string
	cmd := &cobra.Command{
		Use:   "create -f FILE | create namespace|configmap|secret generic NAME ...",
		Short: "Create objects from manifests, or a namespace, configmap or secret",
		Long: "Create the objects of manifests (one that exists is an error: see apply), or a namespace,\n" +
			"a configmap or a generic secret named on the command line, as kubectl create does.",
		Example: "  mkctl create -f yaml/pod.yaml\n  mkctl create namespace audit\n" +
			"  mkctl create configmap shop --from-literal=currency=EUR --from-file=rates.json\n" +
			"  mkctl create secret generic db --from-literal=password=s3cret",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{cmd: cmd.CommandPath(), err: fmt.Errorf("unknown kind %q to create: want namespace, configmap or secret generic (or -f FILE)", args[0])}
			}
			if len(files) == 0 {
				return usageError{cmd: cmd.CommandPath(), err: fmt.Errorf("must give a manifest with -f, or a kind: namespace, configmap or secret generic")}
			}
			return o.eachDocument(files, func(d Document) error { return o.createOne(cmd.Context(), d) })
		},
	}
	cmd.Flags().StringSliceVarP(&files, "filename", "f", nil, "manifest file, directory or - (may repeat)")
	secret := &cobra.Command{Use: "secret", Short: "Create a secret (generic)"}
	secret.AddCommand(newCreateDataCommand(o, "generic NAME [--from-literal=K=V] [--from-file=[K=]PATH]", "a generic (Opaque) secret", api.SecretsResource))
	cmd.AddCommand(&cobra.Command{
		Use: "namespace NAME", Aliases: []string{"ns"}, Short: "Create a namespace", Args: oneArg("namespace name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.createOne(cmd.Context(), Document{Resource: api.NamespacesResource, Source: "the command line",
				Object: &api.Namespace{TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: api.ObjectMeta{Name: args[0]}}})
		},
	}, newCreateDataCommand(o, "configmap NAME [--from-literal=K=V] [--from-file=[K=]PATH]", "a configmap", api.ConfigMapsResource), secret)
	return cmd
}

// newCreateDataCommand creates a configmap or a secret from literals and
// files, as kubectl create configmap|secret generic does.
func newCreateDataCommand(o *Options, use, what string, res api.Resource) *cobra.Command {
	var literals, files []string
	cmd := &cobra.Command{
		Use: use, Short: "Create " + what, Args: oneArg(strings.ToLower(res.Kind) + " name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := dataFrom(literals, files)
			if err != nil {
				return usageError{cmd: cmd.CommandPath(), err: err}
			}
			meta := api.ObjectMeta{Name: args[0], Namespace: o.Namespace}
			var obj api.Object
			if res.Name == api.SecretsResource.Name {
				obj = &api.Secret{TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: meta, Type: api.SecretTypeOpaque, Data: data}
			} else {
				cm := &api.ConfigMap{TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: meta}
				for k, v := range data {
					// Text goes in data, other bytes in binaryData, as kubectl puts them.
					if utf8.Valid(v) {
						if cm.Data == nil {
							cm.Data = map[string]string{}
						}
						cm.Data[k] = string(v)
						continue
					}
					if cm.BinaryData == nil {
						cm.BinaryData = map[string][]byte{}
					}
					cm.BinaryData[k] = v
				}
				obj = cm
			}
			return o.createOne(cmd.Context(), Document{Resource: res, Source: "the command line", Object: obj})
		},
	}
	cmd.Flags().StringArrayVar(&literals, "from-literal", nil, "a key and its value, KEY=VALUE (may repeat)")
	cmd.Flags().StringArrayVar(&files, "from-file", nil, "a file, its name the key, or KEY=PATH (may repeat)")
	return cmd
}

// dataFrom reads --from-literal and --from-file into keys and values; a
// key given twice is a mistake.
func dataFrom(literals, files []string) (map[string][]byte, error) {
	data := map[string][]byte{}
	add := func(k string, v []byte, from string) error {
		if k == "" {
			return fmt.Errorf("%s: the key is empty", from)
		}
		if _, dup := data[k]; dup {
			return fmt.Errorf("%s: key %q given twice", from, k)
		}
		data[k] = v
		return nil
	}
	for _, l := range literals {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return nil, fmt.Errorf("--from-literal=%s: want KEY=VALUE", l)
		}
		if err := add(k, []byte(v), "--from-literal="+l); err != nil {
			return nil, err
		}
	}
	for _, f := range files {
		k, path, named := strings.Cut(f, "=")
		if !named {
			k, path = filepath.Base(f), f
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("--from-file=%s: %w", f, err)
		}
		if err := add(k, b, "--from-file="+f); err != nil {
			return nil, err
		}
	}
	return data, nil
}

// createOne creates the document's object, as kubectl create: one that
// exists is an error.
func (o *Options) createOne(ctx context.Context, d Document) error {
	if err := o.setNamespace(d); err != nil {
		return err
	}
	meta := d.Object.GetObjectMeta()
	if _, err := o.Client().Resource(d.Resource, meta.Namespace).Create(ctx, d.Object); err != nil {
		return wrapOp(err, "creating", d)
	}
	fmt.Fprintln(o.Out, kindName(d.Resource, meta.Name)+" created")
	return nil
}
