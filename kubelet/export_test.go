package kubelet

// JoinClient is joinClient, for the tests of the join against a real
// apiserver (bootstrap_test.go).
var JoinClient = joinClient
