package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"minik8s/controller"
	"minik8s/controller/warmpool"
	"minik8s/pkg/api"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/function"
	"minik8s/scheduler"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

// BenchmarkFuncPodMemory measures what a function pod costs its node, by
// /proc/PID/smaps_rollup: the PSS of every process of the pod (its
// containerd shim, the container logger, funcserver and its Python
// workers), the pod alone on its node, pods on their own network. Idle:
// after one call; busy: while 4 calls hold 4 workers (containerConcurrency
// 4, the default); idle again once the extra workers were trimmed is not
// waited for (a minute). Then a warm generic pod (a warm pool of one,
// started afterwards): its own PSS beside the function's pod, and what the
// two together cost more than the function's pod alone did.
func BenchmarkFuncPodMemory(b *testing.B) {
	ctd := containerdtest.StartContainerd(b)
	ctd.ImportFunctionRuntime(b)
	u := framework.StartUnderlay(b, 1)
	s := u.StartAPIServer(b, nil)
	framework.StartNetFuncRunner(b, u.Nodes[0], s)
	// Every controller but the warm pool's, started below once the
	// function's pod was measured alone.
	var ctls []string
	for _, c := range controller.Controllers {
		if c.Name != warmpool.Name {
			ctls = append(ctls, c.Name)
		}
	}
	framework.StartControllers(b, s, controller.Config{Controllers: ctls})
	framework.StartScheduler(b, s, scheduler.Config{})
	framework.StartNetKubelet(b, u.Nodes[0], s, ctd, "node-mem")

	ctx := context.Background()
	one := 1
	code := "import time\n\ndef run(arg):\n    if arg == 'hold':\n        time.sleep(1.5)\n    return arg\n"
	f := &api.Func{TypeMeta: api.TypeMeta{APIVersion: "v2"}, ObjectMeta: api.ObjectMeta{Name: "memfn"},
		Spec: api.FuncSpec{Name: "memfn", Function: base64.StdEncoding.EncodeToString([]byte(code)),
			MinInstanceNum: &one, InitInstanceNum: &one, MaxInstanceNum: &one}}
	if _, err := s.Client.Funcs("default").Create(ctx, f); err != nil {
		b.Fatal(err)
	}
	if v := syncCall(b, s, "memfn", "warm"); v.Result != "warm" {
		b.Fatalf("result %q", v.Result)
	}
	shim := podShim(b, "memfn")
	var idle, busy podMemory
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		idle = measurePod(b, shim)
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() { defer wg.Done(); syncCall(b, s, "memfn", "hold") }()
		}
		time.Sleep(time.Second) // the four hold their workers
		busy = measurePod(b, shim)
		wg.Wait()
	}
	b.StopTimer()

	// A warm generic pod beside it (issue 28): what it costs alone, and
	// what it adds to the node (the two share the runtime's pages, which
	// PSS splits between them).
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	wp := warmpool.New(s.Client, cache.NewFactory(s.Client), 1)
	go wp.Run(wctx, 1)
	warmPods(b, s, 1)
	time.Sleep(2 * time.Second) // its zygote settles
	warm := measurePod(b, warmShim(b))
	idleBeside := measurePod(b, shim)
	b.ReportMetric(warm.pssMB, "warm-pod-pss-MB")
	b.ReportMetric(warm.pssMB+idleBeside.pssMB-idle.pssMB, "warm-pod-added-pss-MB")
	b.Logf("warm pod: %d processes, %.1f MB PSS, %.1f MB RSS: %s", warm.procs, warm.pssMB, warm.rssMB, warm.detail)

	b.ReportMetric(idle.pssMB, "idle-pod-pss-MB")
	b.ReportMetric(float64(idle.procs), "idle-pod-procs")
	b.ReportMetric(idle.rssMB, "idle-pod-rss-MB")
	b.ReportMetric(busy.pssMB, "busy-pod-pss-MB")
	b.ReportMetric(float64(busy.procs), "busy-pod-procs")
	b.Logf("idle pod: %d processes, %.1f MB PSS, %.1f MB RSS: %s", idle.procs, idle.pssMB, idle.rssMB, idle.detail)
	b.Logf("4 calls running: %d processes, %.1f MB PSS: %s", busy.procs, busy.pssMB, busy.detail)
}

// warmShim finds the containerd shim of a warm generic pod: the parent of
// a funcserver started with --generic.
func warmShim(b *testing.B) int {
	b.Helper()
	for _, pid := range allPIDs() {
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if bytes.HasPrefix(cmd, []byte(function.RuntimeBinary+"\x00")) && bytes.Contains(cmd, []byte("\x00--generic")) {
			if ppid := parentPID(pid); ppid > 1 {
				return ppid
			}
		}
	}
	b.Fatal("no generic funcserver process found")
	return 0
}

type podMemory struct {
	procs        int
	pssMB, rssMB float64
	detail       string
}

// podShim finds the containerd shim of the function's pod: the parent of
// the funcserver whose FUNC_NAME is fn.
func podShim(b *testing.B, fn string) int {
	b.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, pid := range allPIDs() {
			cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if !bytes.HasPrefix(cmd, []byte(function.RuntimeBinary+"\x00")) && string(cmd) != function.RuntimeBinary {
				continue
			}
			env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
			if !bytes.Contains(env, []byte("\x00FUNC_NAME="+fn+"\x00")) && !bytes.HasPrefix(env, []byte("FUNC_NAME="+fn+"\x00")) {
				continue
			}
			if ppid := parentPID(pid); ppid > 1 {
				return ppid
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.Fatalf("no funcserver process of %s found", fn)
	return 0
}

// measurePod sums PSS and RSS over the shim and all its descendants.
func measurePod(b *testing.B, shim int) podMemory {
	b.Helper()
	children := map[int][]int{}
	for _, pid := range allPIDs() {
		children[parentPID(pid)] = append(children[parentPID(pid)], pid)
	}
	var m podMemory
	var parts []string
	for queue := []int{shim}; len(queue) > 0; queue = queue[1:] {
		pid := queue[0]
		queue = append(queue, children[pid]...)
		pss, rss, err := smapsRollup(pid)
		if err != nil {
			continue // exited meanwhile
		}
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		m.procs++
		m.pssMB += pss / 1024
		m.rssMB += rss / 1024
		parts = append(parts, fmt.Sprintf("%s %.1f", strings.TrimSpace(string(comm)), pss/1024))
	}
	if m.procs == 0 {
		b.Fatalf("shim %d is gone", shim)
	}
	m.detail = strings.Join(parts, ", ")
	return m
}

func allPIDs() []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

func parentPID(pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command may hold spaces and parentheses: fields follow the last ')'.
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

// smapsRollup returns the Pss and Rss of a process, in kB.
func smapsRollup(pid int) (pss, rss float64, err error) {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "smaps_rollup"))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		v, _ := strconv.ParseFloat(fields[1], 64)
		switch fields[0] {
		case "Pss:":
			pss = v
		case "Rss:":
			rss = v
		}
	}
	return pss, rss, sc.Err()
}
