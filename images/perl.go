package images

import _ "embed"

// PerlExampleName is the example of a function in another language: an
// image whose own entrypoint serves the runtime's HTTP contract, named by a
// Func's spec.image.
const PerlExampleName = "minik8s/perl-example:latest"

// perlFunction is the function and its HTTP server, in perl-base alone.
//
//go:embed perl/function.pl
var perlFunction []byte

// PerlExamplePath is where the script lies in the image.
const PerlExamplePath = "/usr/local/bin/function.pl"

// PerlExample is the Perl function's image. It takes the Python runtime's
// root filesystem (Debian minbase with python3; perl-base is in every
// minbase) rather than a minbase of its own: measured, a separate minbase
// costs a second debootstrap (half a minute and the network, once per
// machine) and a second base layer (~110 MB unpacked) in every containerd it is
// imported into, while the shared one is a layer the node already holds,
// so the image adds one layer of a few kilobytes.
func PerlExample() Spec {
	base := PythonRuntime()
	return Spec{
		Name:       PerlExampleName,
		Rootfs:     base.Rootfs,
		Files:      []File{{Data: perlFunction, Path: PerlExamplePath, Mode: 0o755}},
		Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"},
		Entrypoint: []string{"/usr/bin/perl", PerlExamplePath},
	}
}
