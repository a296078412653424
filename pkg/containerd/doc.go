// Package containerd is minik8s's side of containerd: Start runs a daemon
// private to minik8s (daemon.go), and Runtime runs the containers of a node
// on a containerd, in the containerd namespace "minik8s". It knows nothing of
// pods: the kubelet describes each container with a ContainerSpec and finds
// its own containers again by their labels.
package containerd
