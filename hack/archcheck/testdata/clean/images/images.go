// Package images is held to the library rule.
package images

import "minik8s/pkg/lib"

var _ = lib.Phase

func Build() {}
