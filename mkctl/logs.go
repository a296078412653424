package mkctl

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"minik8s/pkg/client"
)

func newLogsCommand(o *Options) *cobra.Command {
	var container string
	var follow bool
	cmd := &cobra.Command{
		Use:   "logs POD [-c CONTAINER] [-f]",
		Short: "Print the output of a container of a pod",
		Long: "Print what a container of a pod wrote to stdout and stderr, as its node keeps it.\n" +
			"-c names the container (needed when the pod has several); -f follows the output\n" +
			"until the container stops.",
		Example: "  mkctl logs web\n  mkctl logs web -c sidecar -f",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{cmd: cmd.CommandPath(), err: fmt.Errorf("give exactly one pod name")}
			}
			r, err := o.Client().PodLogs(cmd.Context(), o.Namespace, args[0], client.LogOptions{Container: container, Follow: follow})
			if err != nil {
				return &opError{context: fmt.Sprintf("logs of pod %q: ", args[0]), err: err}
			}
			defer r.Close()
			if _, err := io.Copy(o.Out, r); err != nil && cmd.Context().Err() == nil {
				return fmt.Errorf("reading the log of pod %q: %w", args[0], err)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&container, "container", "c", "", "container of the pod")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing what the container writes")
	return cmd
}
