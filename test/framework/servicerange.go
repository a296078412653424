package framework

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// serviceRangeDir holds one lock file per range; a range belongs to the
// live binary that holds its lock (the kernel drops it however the binary
// dies), so no cleanup is needed. It is not a run dir: sweeps leave it.
const serviceRangeDir = "/tmp/minik8s-service-ranges"

var serviceRangeClaim struct {
	once sync.Once
	cidr string
	err  error
	f    *os.File // held open for the binary's life: the claim
}

// serviceRange claims, once per test binary, a service range no other live
// test binary uses: 127.N.0.0/16 for N in 100..199 (minik8s's default is
// 127.1.0.0/16, the binaries test uses 127.41.0.0/16).
func serviceRange() (string, error) {
	c := &serviceRangeClaim
	c.once.Do(func() {
		if err := os.MkdirAll(serviceRangeDir, 0o755); err != nil {
			c.err = err
			return
		}
		for n := 100; n < 200; n++ {
			f, err := os.OpenFile(filepath.Join(serviceRangeDir, fmt.Sprintf("%d.lock", n)), os.O_CREATE|os.O_RDWR, 0o644)
			if err != nil {
				c.err = err
				return
			}
			if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
				f.Close()
				continue
			}
			c.f, c.cidr = f, fmt.Sprintf("127.%d.0.0/16", n)
			return
		}
		c.err = fmt.Errorf("all 100 service ranges under %s are held by live test binaries", serviceRangeDir)
	})
	return c.cidr, c.err
}
