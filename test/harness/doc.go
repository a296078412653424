// Package harness is what every test binary of minik8s runs under, unit
// tests included: Main (each package's TestMain) gives the binary a run
// dir, runs the teardowns registered with Track however the binary ends
// (signal, -timeout), and sweeps what dead binaries left (sweep.go, with
// the /proc helpers of proc.go). It imports the standard library and pkg/
// only, never a component, so that a library's tests may use it;
// test/framework, which starts the components, builds on it.
package harness
