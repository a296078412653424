// Package mkctl is a component that uses the images library.
package mkctl

import (
	"minik8s/images"
	"minik8s/pkg/api"
)

var _ api.Pod

func Run() { images.Build() }
