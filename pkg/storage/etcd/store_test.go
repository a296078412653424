package etcd_test

import (
	"testing"

	"minik8s/pkg/storage/etcd/etcdtest"
	"minik8s/pkg/storage/storagetest"
)

func TestConformance(t *testing.T) {
	t.Run("network", func(t *testing.T) { storagetest.Run(t, etcdtest.Start(t)) })
	t.Run("in-process", func(t *testing.T) { storagetest.Run(t, etcdtest.StartInProcess(t)) })
}
