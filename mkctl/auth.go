package mkctl

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"minik8s/pkg/api"
)

func newAuthCommand(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "auth",
		Short: "Inspect authorization",
	}
	cmd.AddCommand(newCanICommand(o))
	return cmd
}

// newCanICommand asks the apiserver, as kubectl auth can-i does, with a
// SelfSubjectAccessReview: yes (exit 0) or no (exit 1).
func newCanICommand(o *Options) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "can-i VERB RESOURCE[/SUBRESOURCE] [NAME]",
		Short: "Check whether you may do something",
		Long: "Ask the apiserver whether the credentials in use may do VERB on RESOURCE (in the\n" +
			"namespace of -n, or every namespace with -A). Prints yes or no; exits 1 on no.",
		Example: "  mkctl auth can-i create pods\n  mkctl auth can-i get secrets -n kube-system\n  mkctl auth can-i create funcs/invoke",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 || len(args) > 3 {
				return usageError{cmd: cmd.CommandPath(), err: fmt.Errorf("give VERB RESOURCE and optionally NAME")}
			}
			res, sub, _ := strings.Cut(args[1], "/")
			attrs := &api.ResourceAttributes{Verb: args[0], Resource: res, Subresource: sub}
			if r, ok := api.LookupResource(res); ok {
				attrs.Resource, attrs.Group = r.Name, r.Group
				if r.Namespaced && !all {
					attrs.Namespace = o.Namespace
				}
			}
			if len(args) == 3 {
				attrs.Name = args[2]
			}
			review := api.SelfSubjectAccessReview{TypeMeta: api.TypeMeta{APIVersion: "authorization.k8s.io/v1", Kind: "SelfSubjectAccessReview"},
				Spec: api.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs}}
			var out api.SelfSubjectAccessReview
			if err := o.Client().Do(cmd.Context(), http.MethodPost, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", &review, &out); err != nil {
				return &opError{context: "access review: ", err: err}
			}
			if out.Status.Allowed {
				fmt.Fprintln(o.Out, "yes")
				return nil
			}
			fmt.Fprintln(o.Out, "no")
			return errReported // "no" is the answer: exit 1, nothing more to print
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "ask about every namespace")
	return cmd
}
