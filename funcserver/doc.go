// Package funcserver is the runtime inside every function pod. It reads the
// function from its code dir (the ConfigMap volume, default /func), runs
// preRun.sh once with bash, imports function.py once into a zygote Python
// process, and serves calls on HOST:PORT with long-lived workers forked
// from it (worker.py), which share its pages copy-on-write. It starts one
// worker and is ready once preRun and the import succeeded; a call that
// finds every worker busy forks another, up to Config.Workers, and
// workers idle for a minute are stopped down to one, so an idle pod holds
// the zygote and one fork. A worker that dies is replaced by a fork; only
// a zygote that died imports again. In a pod (the command's
// --exit-on-failure, its default) a failing preRun or import ends it,
// leaving the cause as the container's termination message: the pod's
// status, the Func's Ready condition and the calls waiting for a pod then
// name it, instead of waiting for a pod that never becomes ready.
//
// HTTP contract (all answers JSON):
//
//	POST /invoke, POST /   body: the argument, raw bytes taken as UTF-8.
//	    Header X-Func-Timeout-Seconds: overrides the call timeout.
//	    Headers X-Func-Event, X-Func-Context: the call's event and context.
//	    200 {"result","check","hasCheck","output","error","durationMs","queueMs","pod"}
//	        (see Response); a function that raised, timed out or killed its
//	        worker is still 200, with error {"message","type","trace"}.
//	    503 not ready or draining, 400 bad timeout header, 413 body too
//	        large: same shape, error.type Unavailable, BadRequest, TooLarge.
//	GET /healthz   200 {"status":"ok"} while the process serves.
//	GET /readyz    200 {"ready":true,"status":"ready"}, else 503 with
//	               status starting|preRun|importing|failed|restarting|
//	               draining and a reason.
//	GET /stats     counters (see Stats); GET /metrics the same for Prometheus.
//
// A call is ret = run(arg), then check(ret) if defined; a run that takes two
// positional parameters is called run(event, context) instead (seed 002):
// event = {"data": the argument, JSON-decoded when it parses and its
// content type is not text/*, "metadata": the X-Func-Event header},
// context = the X-Func-Context header, its memory-limit filled from the
// pod's cgroup (see pkg/function's contract). ret travels as a
// string: str as is, None as "", other values json.dumps, values JSON cannot
// encode str(); check gets that same string. Everything the call writes is
// its output, and only its: sys.stdout and sys.stderr (print, logging
// handlers included), writes to fds 1 and 2, and the subprocesses it starts,
// in the order written, cut after 1 MiB with the cut noted; each worker
// process runs one call at a time with fds 1 and 2 on a memfd of that call,
// so concurrent calls in one pod never mix. Outside calls, fds 1 and 2 are
// the pod log. The timeout counts from the call's
// arrival, queueing for a worker included; a worker still running at the
// deadline is killed and replaced by a fork, as is one that exits during a
// call.
//
// A generic server (--generic) starts with no function and is handed one,
// once, by a function runner on its TLS specialise port (specialize.go):
// a warm runtime pod that serves a function without a pod of its own
// being created for it.
//
// When Run's context ends (SIGTERM), /readyz and new calls answer 503, the
// calls in flight finish (each bounded by its timeout), then Run returns.
package funcserver
