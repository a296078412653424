// Package harness is what every test binary of minik8s runs under, unit
// tests included: Main (each package's TestMain) gives the binary a run
// dir, runs the teardowns registered with Track however the binary ends
// (signal, -timeout), and sweeps what dead binaries left (sweep.go, with
// the /proc helpers of proc.go); NeedE2E and GoBinary serve the tests
// besides. It imports the standard library only, so that any test may use
// it: test/containerdtest (a private containerd) and test/framework (the
// components) build on it.
package harness
