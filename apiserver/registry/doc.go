// Package registry is the apiserver's generic registry, as
// k8s.io/apiserver's generic registry is Kubernetes': the storage logic of
// each resource, independent of HTTP. A Store sets the metadata the server
// owns, defaults, validates and admits an object, then writes it to the
// store; a kind's own behaviour (allocating a Service its cluster IP, a
// Node its pod CIDR, a pod's graceful delete, a namespace's lifecycle) is
// its strategy, looked up by resource (strategy.go). The watch cache (one
// store watch per resource, fanned out), the namespace index, the
// in-memory mirror the authorizers read, label and field selectors, and
// finalizers live here too.
//
// It imports only libraries (pkg/) and the allocators' room: the HTTP
// front (the parent package) and the function routes stand on it, never
// the other way round.
package registry
