// Command minik8s-logger is the kubelet's container logger: containerd's
// shim starts it beside each container (a binary:// log URI) with the
// container's stdout on fd 3, its stderr on fd 4 and fd 5 to close once
// ready, and it writes their lines to the log file given as "path FILE",
// each with its time (the CRI log format, so that kubectl logs --since and
// --timestamps work).
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"minik8s/kubelet/logs/cri"
)

func main() {
	path := ""
	for i := 1; i+1 < len(os.Args); i += 2 {
		if os.Args[i] == "path" {
			path = os.Args[i+1]
		}
	}
	if path == "" {
		fmt.Fprintln(os.Stderr, "minik8s-logger: no log path (started by containerd's shim with: path FILE)")
		os.Exit(2)
	}
	// When the container's task is deleted the shim closes the pipes, then
	// sends SIGTERM and kills after 12 s: the logger ends at the pipes'
	// end, with everything the container wrote, not at the signal.
	signal.Ignore(syscall.SIGTERM)
	stdout, stderr, ready := os.NewFile(3, "stdout"), os.NewFile(4, "stderr"), os.NewFile(5, "ready")
	f, err := cri.OpenLog(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "minik8s-logger:", err)
		os.Exit(1)
	}
	ready.Close()
	if err := cri.Log(f, stdout, stderr); err != nil {
		fmt.Fprintln(os.Stderr, "minik8s-logger:", err)
		os.Exit(1)
	}
}
