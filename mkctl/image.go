package mkctl

import (
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"minik8s/images"
	"minik8s/pkg/containerd"
)

// DefaultContainerdAddress is the containerd that `minik8s up` starts.
const DefaultContainerdAddress = "./data/containerd/containerd.sock"

func containerdFromEnv() string {
	if a := os.Getenv("MINIK8S_CONTAINERD"); a != "" {
		return a
	}
	return DefaultContainerdAddress
}

func newImageCommand(o *Options) *cobra.Command {
	var address string
	cmd := &cobra.Command{
		Use:   "image (import FILE.tar | ls)",
		Short: "Import and list the images of a node's containerd",
		Long: "Manage the images of a node's containerd (namespace " + containerd.Namespace + "), where no registry\n" +
			"is reachable: import an image archive (docker save or OCI layout tar) or list the images.",
	}
	cmd.PersistentFlags().StringVar(&address, "containerd-address", containerdFromEnv(), "containerd socket of the node (or set MINIK8S_CONTAINERD)")

	importCmd := &cobra.Command{
		Use:     "import FILE.tar...",
		Short:   "Import image archives into the node's containerd",
		Example: "  mkctl image import python-runtime.tar",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{cmd: cmd.CommandPath(), err: fmt.Errorf("give the image archive to import")}
			}
			rt, err := containerd.New(cmd.Context(), address, containerd.Options{})
			if err != nil {
				return err
			}
			defer rt.Close()
			for _, f := range args {
				names, err := images.ImportFile(cmd.Context(), rt, f)
				if err != nil {
					return err
				}
				for _, n := range names {
					fmt.Fprintf(o.Out, "imported %s\n", n)
				}
			}
			return nil
		},
	}
	lsCmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the images of the node's containerd",
		RunE: func(cmd *cobra.Command, args []string) error {
			rt, err := containerd.New(cmd.Context(), address, containerd.Options{})
			if err != nil {
				return err
			}
			defer rt.Close()
			imgs, err := rt.ListImages(cmd.Context())
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(o.Out, 0, 8, 3, ' ', 0)
			fmt.Fprintln(w, "NAME\tDIGEST\tSIZE\tCREATED")
			for _, img := range imgs {
				digest := img.Digest
				if len(digest) > 19 {
					digest = digest[:19]
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", img.Name, digest, humanSize(img.Size), img.CreatedAt.UTC().Format(time.RFC3339))
			}
			return w.Flush()
		},
	}
	cmd.AddCommand(importCmd, lsCmd)
	return cmd
}

func humanSize(n int64) string {
	switch {
	case n < 0:
		return "?"
	case n >= 1<<30:
		return fmt.Sprintf("%.1fGiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1fKiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}
