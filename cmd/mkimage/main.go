// Command mkimage builds the project's container images from Debian
// packages (no registry needed) and imports them into a containerd: the
// Python runtime of function pods and, unless --examples=false, the example
// function in another language (minik8s/perl-example:latest).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"minik8s/images"
	"minik8s/pkg/cli/flags"
	"minik8s/pkg/containerd"
)

// files collects --add SRC:DST flags.
type files []images.File

func (f *files) String() string { return "" }

func (f *files) Set(v string) error {
	src, dst, ok := strings.Cut(v, ":")
	if !ok || src == "" || !strings.HasPrefix(dst, "/") {
		return fmt.Errorf("%q is not SRC:/absolute/path/in/image", v)
	}
	st, err := os.Stat(src)
	if err != nil {
		return err
	}
	*f = append(*f, images.File{Source: src, Path: dst, Mode: st.Mode().Perm()})
	return nil
}

func main() {
	var extra files
	var address string
	flags.ContainerdAddress(flag.CommandLine, &address, os.Getenv("MINIK8S_CONTAINERD"))
	cacheDir := flag.String("cache-dir", images.DefaultCacheDir, "cache of root filesystems and built images")
	mirror := flag.String("mirror", "", "Debian mirror (default: the machine's apt sources)")
	output := flag.String("output", "", "also copy the python-runtime image archive to this file")
	flag.Var(&extra, "add", "extra file for the python-runtime image, SRC:/path/in/image (repeatable)")
	examples := flag.Bool("examples", true, "also build the example image of a function in another language ("+images.PerlExampleName+")")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	specs := []images.Spec{images.PythonRuntime(extra...)}
	if *examples {
		specs = append(specs, images.PerlExample())
	}
	if err := run(ctx, address, *cacheDir, *mirror, *output, specs); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

// run builds specs (the first is the Python runtime, which --output
// copies) and imports them when given a containerd.
func run(ctx context.Context, address, cacheDir, mirror, output string, specs []images.Spec) error {
	b := images.Builder{CacheDir: cacheDir, Mirror: mirror}
	paths := make([]string, len(specs))
	for i, spec := range specs {
		start := time.Now()
		path, err := b.Build(ctx, spec)
		if err != nil {
			return err
		}
		fmt.Printf("built %s: %s (%s)\n", spec.Name, path, time.Since(start).Round(time.Millisecond))
		paths[i] = path
	}
	if output != "" {
		if err := copyFile(paths[0], output); err != nil {
			return err
		}
	}
	if address == "" {
		return nil
	}
	rt, err := containerd.New(ctx, address, containerd.Options{})
	if err != nil {
		return err
	}
	defer rt.Close()
	for _, path := range paths {
		names, err := images.ImportFile(ctx, rt, path)
		if err != nil {
			return err
		}
		for _, n := range names {
			fmt.Printf("imported %s into %s (namespace %s)\n", n, address, containerd.Namespace)
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
