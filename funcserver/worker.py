"""minik8s function worker: imports function.py once, then serves calls.

Started by funcserver as `python3 -u worker.py CODE_DIR`. Protocol: one JSON
object per line in each direction.

  worker -> server, once:  {"type": "ready", "hasCheck": bool, "pid": int}
                       or  {"type": "importError", "error": ERROR}
  server -> worker:        {"id": int, "arg": str, "event": dict, "context": dict}
  worker -> server:        {"type": "result", "id": int, "result": str,
                            "check": bool or null, "output": str,
                            "error": null or ERROR}
  ERROR = {"message": str, "type": str, "trace": str}

The protocol runs on private duplicates of fds 0 and 1. Fd 0 is then
/dev/null and fds 1 and 2 are the worker's stderr (the pod log) outside
calls and the call's output during one, so nothing user code prints or
reads, even through os.write or a subprocess, can touch the protocol, and
everything a call writes is its own.
"""

import contextlib
import importlib.util
import inspect
import io
import json
import logging
import os
import sys
import time
import traceback

import minik8s_plugins

# Captured output of one call is cut after this many bytes so a chatty
# function cannot exhaust memory.
MAX_OUTPUT_BYTES = 1 << 20

WORKER_FILE = os.path.abspath(__file__)


class CallOutput:
    """Everything one call writes: print, logging, os.write to fds 1 and 2,
    and the subprocesses it starts. For the call, fds 1 and 2 are a fresh
    memfd (its subprocesses inherit it, and one left running after the call
    writes to a file nobody reads); sys.stdout and sys.stderr write straight
    to those fds, so all of it lands in the order it was written. Python's
    own writes stop counting at MAX_OUTPUT_BYTES, and the answer keeps that
    much, noting the cut."""

    def __init__(self, pod_log):
        self.pod_log = pod_log
        self.fd = os.memfd_create("call-output", os.MFD_CLOEXEC)
        self.written = 0
        self.dropped = 0
        os.dup2(self.fd, 1)
        os.dup2(self.fd, 2)

    def write(self, fd, s):
        data = s.encode("utf-8", "backslashreplace")
        room = MAX_OUTPUT_BYTES - self.written
        if len(data) > room:
            self.dropped += len(data) - max(room, 0)
            data = data[: max(room, 0)]
        self.written += len(data)
        while data:
            n = os.write(fd, data)
            data = data[n:]

    def close(self):
        """Puts the pod log back on fds 1 and 2 and returns the output."""
        os.dup2(self.pod_log, 1)
        os.dup2(self.pod_log, 2)
        size = os.fstat(self.fd).st_size
        data = os.pread(self.fd, min(size, MAX_OUTPUT_BYTES), 0)
        os.close(self.fd)
        text = data.decode("utf-8", "replace")
        cut = max(size - MAX_OUTPUT_BYTES, 0) + self.dropped
        if cut:
            text += "\n[output truncated: %d bytes dropped]\n" % cut
        return text


PLUGINS_FILE = os.path.abspath(minik8s_plugins.__file__)


def is_worker_frame(frame):
    return frame.filename in (WORKER_FILE, PLUGINS_FILE) or frame.filename.startswith("<frozen importlib")


def error_of(e):
    """Message, type and trace of e, the trace starting in user code; an
    exception that cannot even say what it is still gives an error."""
    try:
        return describe(e)
    except BaseException:
        return {"message": type(e).__name__, "type": type(e).__name__, "trace": ""}


def describe(e):
    te = traceback.TracebackException(type(e), e, e.__traceback__)
    te.stack = traceback.StackSummary.from_list(
        [f for f in te.stack if not is_worker_frame(f)]
    )
    return {
        "message": str(e) or type(e).__name__,
        "type": type(e).__name__,
        "trace": "".join(te.format()),
    }


def plain_error(message, typ):
    return {"message": message, "type": typ, "trace": ""}


def to_str(ret):
    """The string a return value travels as: str as is, None as "", anything
    JSON can encode as JSON, anything else as str()."""
    if isinstance(ret, str):
        return ret
    if ret is None:
        return ""
    try:
        return json.dumps(ret)
    except (TypeError, ValueError):
        return str(ret)


def load(code_dir):
    path = os.path.join(code_dir, "function.py")
    spec = importlib.util.spec_from_file_location("function", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["function"] = mod
    spec.loader.exec_module(mod)
    return mod


class Router(io.TextIOBase):
    """Stands in for sys.stdout and sys.stderr for good: writes go to the
    current call's output, and outside calls to the real stream (the pod
    log). Unlike contextlib.redirect_stdout this also catches writers that
    kept a reference to the stream, such as a logging handler set up at
    import."""

    def __init__(self, real, fd):
        super().__init__()
        self.real = real
        self.fd = fd
        self.target = None

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not " + type(s).__name__)
        target = self.target
        if target is None:
            return self.real.write(s)
        target.write(self.fd, s)
        return len(s)

    def flush(self):
        if self.target is None:
            self.real.flush()

    def writable(self):
        return True

    def isatty(self):
        return False

    def fileno(self):
        return self.real.fileno()

    @property
    def encoding(self):
        return self.real.encoding

    @property
    def errors(self):
        return self.real.errors

    @property
    def buffer(self):
        return self.real.buffer


@contextlib.contextmanager
def captured(out, routers):
    if out is None:
        yield
        return
    for r in routers:
        r.real.flush()
        r.target = out
    try:
        yield
    finally:
        for r in routers:
            r.target = None


def takes_event(run):
    """Whether run is run(event, context) (seed 002) rather than run(arg):
    it takes two positional parameters without defaults."""
    try:
        params = inspect.signature(run).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    required = [p for p in params if p.kind in positional and p.default is inspect.Parameter.empty]
    return len(required) >= 2


def event_of(req):
    """The event a run(event, context) gets: data, the argument decoded as
    JSON when it parses (unless its content type says text), and metadata."""
    metadata = req.get("event") or {}
    arg = req["arg"]
    data = arg
    ctype = (metadata.get("datacontenttype") or "").lower()
    if not ctype.startswith("text/"):
        try:
            data = json.loads(arg)
        except ValueError:
            pass
    return {"data": data, "metadata": metadata}


def run_coroutine(v):
    """Runs a coroutine to its end. asyncio is imported only when a
    function is async: it costs an idle worker some 8 MB."""
    import asyncio

    return asyncio.run(v)


def awaited(v):
    return run_coroutine(v) if inspect.iscoroutine(v) else v


def run_call(run, check, req, reply, with_event):
    try:
        if with_event:
            ret = run(event_of(req), req.get("context") or {})
        else:
            ret = run(req["arg"])
        reply["result"] = to_str(awaited(ret))
        if check is not None:
            reply["check"] = bool(awaited(check(reply["result"])))
    except BaseException as e:  # SystemExit too: a call must not end the worker
        reply["error"] = error_of(e)


def run_hooks(ctx, hooks, kind, reply):
    """Runs plugin hooks in order; a failing pre hook fails the call (and
    stops the hooks), a failing post hook is recorded. Once tracing started
    the run's span, every other hook is timed as a span under it."""
    for name, hook in hooks:
        ctx.current = name
        start = time.time_ns()
        try:
            v = hook(ctx)
            if v is not None and inspect.iscoroutine(v):
                run_coroutine(v)
        except BaseException as e:
            failed = error_of(e)
        else:
            failed = None
            if kind == "pre":
                ctx.ran.append(name)
        # The tracing plugin's own hooks are the edges of the run's span.
        if ctx.trace_id and name != "tracing":
            span = {"name": "plugin %s %s" % (name, kind), "traceId": ctx.trace_id, "spanId": minik8s_plugins.span_id(),
                    "parentSpanId": ctx.run_span_id, "startNs": start, "endNs": time.time_ns()}
            if failed:
                span["error"] = failed["message"]
            ctx.spans.append(span)
        if failed is None:
            continue
        if kind == "pre":
            reply["error"] = {"message": "pre plugin %s failed: %s: %s" % (name, failed["type"], failed["message"]),
                              "type": "PluginError", "trace": failed["trace"]}
            return False
        reply.setdefault("pluginErrors", []).append("%s: %s: %s" % (name, failed["type"], failed["message"]))
    return True


# FUNC_LOG_CAPTURE=off leaves what calls write to the pod log, as it is
# (the answers carry no output): the baseline the capture is measured by.
CAPTURE = os.environ.get("FUNC_LOG_CAPTURE", "on") != "off"


def call(run, check, req, routers, pod_log, plugins=None, with_event=False):
    out = CallOutput(pod_log) if CAPTURE else None
    reply = {"type": "result", "id": req["id"], "result": "", "check": None, "error": None}
    factory = logging.getLogRecordFactory()
    try:
        with captured(out, routers):
            if plugins is None:
                run_call(run, check, req, reply, with_event)
            else:
                with_plugins(run, check, req, reply, with_event, plugins)
    finally:
        # Whatever happened, the pod log is back on fds 1 and 2, and what a
        # plugin set up for the call alone is undone.
        reply["output"] = out.close() if out else ""
        logging.setLogRecordFactory(factory)
        if plugins is not None:
            minik8s_plugins.end_call()
    return reply


def with_plugins(run, check, req, reply, with_event, plugins):
    by_name, pre, post = plugins
    ctx = minik8s_plugins.Context(req, by_name)
    if run_hooks(ctx, pre, "pre", reply):
        run_call(run, check, req, reply, with_event)
        ctx.result, ctx.error = reply["result"], reply["error"]
        run_hooks(ctx, post, "post", reply)
    else:
        # The call failed before it ran: the built-ins whose pre ran still
        # end the run's span and count the failure.
        ctx.result, ctx.error = "", reply["error"]
        ran = set(ctx.ran)
        run_hooks(ctx, [(n, h) for n, h in post if n in ran and n in minik8s_plugins.BUILTIN], "post", reply)
    if ctx.spans:
        reply["spans"] = ctx.spans
    if ctx.metrics:
        reply["metrics"] = ctx.metrics


def main():
    code_dir = os.path.abspath(sys.argv[1])
    proto_in = os.fdopen(os.dup(0), "rb")
    proto_out = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    pod_log = os.dup(2)
    routers = (Router(sys.stdout, 1), Router(sys.stderr, 2))
    sys.stdout, sys.stderr = routers

    def send(msg):
        proto_out.write(json.dumps(msg).encode("utf-8") + b"\n")
        proto_out.flush()

    # The code dir is a read-only volume in a pod: no __pycache__.
    sys.dont_write_bytecode = True
    os.chdir(code_dir)
    # Python put this script's own directory first; the function's goes there.
    sys.path[0] = code_dir

    try:
        mod = load(code_dir)
    except BaseException as e:
        send({"type": "importError", "error": error_of(e)})
        return 1
    run = getattr(mod, "run", None)
    if run is None:
        send({"type": "importError", "error": plain_error("function.py defines no run(arg)", "AttributeError")})
        return 1
    if not callable(run):
        send({"type": "importError", "error": plain_error("run in function.py is not callable", "TypeError")})
        return 1
    check = getattr(mod, "check", None)
    if check is not None and not callable(check):
        send({"type": "importError", "error": plain_error("check in function.py is not callable", "TypeError")})
        return 1
    plugins = None
    pre, post = minik8s_plugins.names("FUNC_PLUGINS_PRE"), minik8s_plugins.names("FUNC_PLUGINS_POST")
    if pre or post:
        try:
            plugins = minik8s_plugins.load(pre, post)
        except BaseException as e:
            send({"type": "importError", "error": error_of(e)})
            return 1
    send({"type": "ready", "hasCheck": check is not None, "pid": os.getpid()})

    with_event = takes_event(run)
    for line in proto_in:
        send(call(run, check, json.loads(line), routers, pod_log, plugins, with_event))
    return 0


if __name__ == "__main__":
    sys.exit(main())
