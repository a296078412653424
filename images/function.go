package images

import "minik8s/pkg/function"

// FunctionRuntime is the Python runtime with the function server added:
// the image every function pod runs. funcserver is the path of a static
// build of cmd/funcserver on the build machine.
func FunctionRuntime(funcserver string) Spec {
	return PythonRuntime(File{Source: funcserver, Path: function.RuntimeBinary, Mode: 0o755})
}
