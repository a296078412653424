package etcd_test

import (
	"testing"

	"minik8s/pkg/storage/storagetest"
	"minik8s/test/framework"
)

func TestConformance(t *testing.T) {
	storagetest.Run(t, framework.StartEtcd(t))
}
