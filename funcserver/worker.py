"""minik8s function workers: a zygote imports function.py once, then
forks the workers that serve calls (see Zygote).

Started by funcserver as `python3 -u worker.py CODE_DIR` with its control
socket at fd 3; with --generic it first says {"type": "generic"} and
waits for {"op": "load", "env": {...}} before it imports the function. Protocol of each worker, on its own pipes, and of the
zygote's hello: one JSON object per line in each direction.

  worker -> server, once:  {"type": "ready", "hasCheck": bool, "pid": int}
                       or  {"type": "importError", "error": ERROR} (the zygote)
  server -> worker:        {"id": int, "arg": BYTES, "event": dict, "context": dict}
  worker -> server:        {"type": "result", "id": int, "result": BYTES,
                            "sends": [{"output": str, "data": BYTES}],
                            "check": bool or null, "output": str,
                            "outputDropped": int, "error": null or ERROR}
  ERROR = {"message": str, "type": str, "trace": str}
  BYTES = str (bytes that are UTF-8) or {"base64": str} (others), as
          api.Bytes has them: run gets a str, or bytes that are not UTF-8.

The protocols run on private fds that no subprocess inherits. Fd 0 is
/dev/null and fds 1 and 2 are the worker's stderr (the pod log) outside
calls and the call's output during one, so nothing user code prints or
reads, even through os.write or a subprocess, can touch the protocol, and
everything a call writes is its own.
"""

import base64
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

import minik8s
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
        """Puts the pod log back on fds 1 and 2 and returns the output
        (with the cut noted) and how many bytes were cut."""
        os.dup2(self.pod_log, 1)
        os.dup2(self.pod_log, 2)
        size = os.fstat(self.fd).st_size
        data = os.pread(self.fd, min(size, MAX_OUTPUT_BYTES), 0)
        os.close(self.fd)
        text = data.decode("utf-8", "replace")
        cut = max(size - MAX_OUTPUT_BYTES, 0) + self.dropped
        if cut:
            text += "\n[output truncated: %d bytes dropped]\n" % cut
        return text, cut


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
    return encode_result(ret, False)[0]


def encode_result(ret, with_event):
    """A return value as it travels, and how it answers over HTTP: "json"
    for a value JSON encodes, "http" for {"statusCode": 100..599, ...}
    returned by run(event, context) (the answer it describes, as AWS
    Lambda's proxy integration has it), "" for text."""
    if isinstance(ret, str):
        return ret, ""
    if isinstance(ret, (bytes, bytearray, memoryview)):
        return bytes(ret), ""
    if ret is None:
        return "", ""
    try:
        s = json.dumps(ret)
    except (TypeError, ValueError):
        return str(ret), ""
    code = ret.get("statusCode") if isinstance(ret, dict) else None
    if with_event and type(code) is int and 100 <= code <= 599:
        return s, "http"
    return s, "json"


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
    JSON when it parses (unless its content type says text), and metadata,
    with the raw input as body and the content type as content-type (seed
    002's names)."""
    metadata = dict(req.get("event") or {})
    arg = req["arg"]
    metadata["body"] = arg
    if metadata.get("datacontenttype"):
        metadata.setdefault("content-type", metadata["datacontenttype"])
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
        reply["result"], reply["resultType"] = encode_result(awaited(ret), with_event)
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
            # Named with its version (seed 000: traces say which plugin ran).
            version = getattr(ctx._plugins.get(name), "version", "")
            label = "%s@%s" % (name, version) if version else name
            span = {"name": "plugin %s %s" % (label, kind), "traceId": ctx.trace_id, "spanId": minik8s_plugins.span_id(),
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


def call(run, check, req, routers, pod_log, plugins=None, with_event=False, deliver=None):
    out = CallOutput(pod_log) if CAPTURE else None
    reply = {"type": "result", "id": req["id"], "result": "", "check": None, "error": None}
    factory = logging.getLogRecordFactory()
    minik8s.begin_call((req.get("context") or {}).get("outputs"), deliver)
    try:
        with captured(out, routers):
            if plugins is None:
                run_call(run, check, req, reply, with_event)
            else:
                with_plugins(run, check, req, reply, with_event, plugins)
    finally:
        # Whatever happened, the pod log is back on fds 1 and 2, and what a
        # plugin set up for the call alone is undone.
        reply["output"], reply["outputDropped"] = out.close() if out else ("", 0)
        sends = [s for s in minik8s.end_call() if s is not None]
        if sends and reply["error"] is None:
            # A run that raised sends nothing.
            reply["sends"] = [{"output": s["output"], "data": encode_bytes(s["data"])} for s in sends]
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


def load_function(code_dir):
    """Imports function.py and the plugins it names: (run, check,
    plugins), or the ERROR saying why it cannot serve."""
    try:
        mod = load(code_dir)
    except BaseException as e:
        return None, error_of(e)
    run = getattr(mod, "run", None)
    if run is None:
        return None, plain_error("function.py defines no run(arg)", "AttributeError")
    if not callable(run):
        return None, plain_error("run in function.py is not callable", "TypeError")
    check = getattr(mod, "check", None)
    if check is not None and not callable(check):
        return None, plain_error("check in function.py is not callable", "TypeError")
    plugins = None
    pre, post = minik8s_plugins.names("FUNC_PLUGINS_PRE"), minik8s_plugins.names("FUNC_PLUGINS_POST")
    if pre or post:
        try:
            plugins = minik8s_plugins.load(pre, post)
        except BaseException as e:
            return None, error_of(e)
    return (run, check, plugins), None


def decode_bytes(v):
    """BYTES as a call gets them: str, or the bytes that are not UTF-8."""
    if isinstance(v, dict):
        return base64.b64decode(v.get("base64") or "")
    return v


def encode_bytes(v):
    """A value as BYTES: bytes that are UTF-8 travel as str."""
    if not isinstance(v, bytes):
        return v
    try:
        return v.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(v).decode("ascii")}


def encode_line(msg):
    """A protocol message as it travels: one JSON object on a line."""
    return json.dumps(msg).encode("utf-8") + b"\n"


def line_writer(f):
    def send(msg):
        f.write(encode_line(msg))
        f.flush()

    return send


def serve(in_fd, out_fd, fn, routers, pod_log):
    """A forked worker: serves calls one at a time on its own pipes."""
    run, check, plugins = fn
    proto_in = os.fdopen(in_fd, "rb")
    send = line_writer(os.fdopen(out_fd, "wb"))
    send({"type": "ready", "hasCheck": check is not None, "pid": os.getpid()})
    with_event = takes_event(run)

    def deliverer(req):
        """Sends during call req: each goes to the server as a "send"
        line, and the call waits for its "sent" answer."""
        def deliver(s):
            send({"type": "send", "id": req["id"], "output": s["output"], "data": encode_bytes(s["data"])})
            line = proto_in.readline()
            if not line:
                raise SystemExit(0)  # the server is gone: so is this worker
            ack = json.loads(line)
            if ack.get("type") != "sent" or ack.get("id") != req["id"]:
                raise SystemExit("protocol: %r answers a send" % ack)
            return ack.get("error") or None
        return deliver

    while True:
        line = proto_in.readline()
        if not line:
            break
        req = json.loads(line)
        req["arg"] = decode_bytes(req.get("arg", ""))
        deliver = deliverer(req) if req.get("syncSends") else None
        reply = call(run, check, req, routers, pod_log, plugins, with_event, deliver)
        reply["result"] = encode_bytes(reply["result"])
        send(reply)
    return 0


class Zygote:
    """Holds the imported function and forks workers from it on request,
    copy-on-write, so a worker costs a fork, not an interpreter and an
    import. The workers are its children: it reaps them and reports their
    exits, and kills one only while it has not reaped it, so a kill never
    reaches a recycled pid. Control protocol, one JSON object per line on
    the socket at fd 3:

      zygote -> server, once: the hello of the module docstring
      server -> zygote:  {"op": "fork"} with two fds (SCM_RIGHTS): the
                         worker's call input and its answer output
                         {"op": "kill", "pid": int}
      zygote -> server:  {"type": "forked", "pid": int}
                         {"type": "exit", "pid": int, "status": int (wait status)}
    """

    def __init__(self, ctrl, code_dir, fn, routers, pod_log):
        import ctypes
        import signal

        self.ctrl, self.code_dir, self.fn, self.routers, self.pod_log = ctrl, code_dir, fn, routers, pod_log
        # A fork keeps only the thread that forked: when the import started
        # threads, the function may need them, and each worker is a fresh
        # interpreter that imports it (exec'd by the fork), as it would be
        # without a zygote.
        threading = sys.modules.get("threading")
        self.threaded = threading is not None and threading.active_count() > 1
        if self.threaded:
            print("function.py started threads at import: each worker imports it anew", file=sys.__stderr__, flush=True)
        self.send = lambda msg: ctrl.sendall(encode_line(msg))
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.signal = signal
        self.pid = os.getpid()
        self.children = set()
        self.fds = []
        # SIGCHLD wakes the loop through this pipe.
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)

    def loop(self, buf=b""):
        import select
        import socket

        # What the import made is shared with every fork: out of the
        # collector's reach, its pages are not copied by a collection.
        import gc

        gc.freeze()
        while True:
            readable, _, _ = select.select([self.ctrl, self.wake_r], [], [])
            if self.wake_r in readable:
                try:
                    os.read(self.wake_r, 4096)
                except BlockingIOError:
                    pass
            self.reap()
            if self.ctrl not in readable:
                continue
            data, fds, _, _ = socket.recv_fds(self.ctrl, 65536, 16)
            if not data:
                return 0
            self.fds.extend(fds)
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                self.handle(json.loads(line))

    def handle(self, op):
        if op["op"] == "fork":
            in_fd, out_fd = self.fds.pop(0), self.fds.pop(0)
            pid = os.fork()
            if pid == 0:
                self.child(in_fd, out_fd)
            os.close(in_fd)
            os.close(out_fd)
            try:
                os.setpgid(pid, pid)  # as the child does: whichever runs first
            except OSError:
                pass
            self.children.add(pid)
            self.send({"type": "forked", "pid": pid})
        elif op["op"] == "kill":
            pid = op["pid"]
            if pid in self.children:
                for kill in (os.killpg, os.kill):
                    try:
                        kill(pid, self.signal.SIGKILL)
                        break
                    except OSError:
                        pass

    def reap(self):
        for pid in list(self.children):
            try:
                got, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                got, status = pid, 0
            if got:
                self.children.discard(pid)
                self.send({"type": "exit", "pid": pid, "status": status})

    def child(self, in_fd, out_fd):
        code = 1
        try:
            os.setpgid(0, 0)  # a kill of its group reaches what it spawns
            self.libc.prctl(1, self.signal.SIGKILL)  # PR_SET_PDEATHSIG: dies with the zygote
            if os.getppid() != self.pid:
                os._exit(1)
            self.signal.set_wakeup_fd(-1)
            self.signal.signal(self.signal.SIGCHLD, self.signal.SIG_DFL)
            self.ctrl.close()
            for fd in [self.wake_r, self.wake_w] + self.fds:
                os.close(fd)
            if self.threaded:
                os.set_inheritable(in_fd, True)
                os.set_inheritable(out_fd, True)
                sys.__stderr__.flush()
                os.execv(sys.executable, [sys.executable, "-u", WORKER_FILE, self.code_dir, "--serve", str(in_fd), str(out_fd)])
            code = serve(in_fd, out_fd, self.fn, self.routers, self.pod_log)
        except BaseException:
            traceback.print_exc(file=sys.__stderr__)
        finally:
            try:
                sys.__stderr__.flush()
            finally:
                os._exit(code)


def setup(code_dir):
    """Puts /dev/null on fd 0 and the pod log on fds 1 and 2, routes
    sys.stdout and sys.stderr through Routers, and makes the code dir the
    working directory and the first place imports look."""
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    pod_log = os.dup(2)
    routers = (Router(sys.stdout, 1), Router(sys.stderr, 2))
    sys.stdout, sys.stderr = routers
    # The code dir is a read-only volume in a pod: no __pycache__.
    sys.dont_write_bytecode = True
    os.chdir(code_dir)
    # Python put this script's own directory first; the function's goes there.
    sys.path[0] = code_dir
    return routers, pod_log


def main():
    code_dir = os.path.abspath(sys.argv[1])
    if len(sys.argv) == 5 and sys.argv[2] == "--serve":
        # A worker of a zygote whose import started threads, which a fork
        # would lose: it imports the function itself.
        in_fd, out_fd = int(sys.argv[3]), int(sys.argv[4])
        os.set_inheritable(in_fd, False)
        os.set_inheritable(out_fd, False)
        routers, pod_log = setup(code_dir)
        fn, err = load_function(code_dir)
        if err is not None:
            line_writer(os.fdopen(out_fd, "wb"))({"type": "importError", "error": err})
            return 1
        return serve(in_fd, out_fd, fn, routers, pod_log)

    import socket

    ctrl = socket.socket(fileno=3)
    os.set_inheritable(ctrl.fileno(), False)
    routers, pod_log = setup(code_dir)
    buf = b""
    if "--generic" in sys.argv[2:]:
        # A warm zygote: the runtime is imported; the function is not
        # there yet. It is loaded when told, with the env it comes with.
        ctrl.sendall(encode_line({"type": "generic", "pid": os.getpid()}))
        while b"\n" not in buf:
            data = ctrl.recv(65536)
            if not data:
                return 0
            buf += data
        line, buf = buf.split(b"\n", 1)
        os.environ.update(json.loads(line).get("env") or {})
    fn, err = load_function(code_dir)
    if err is not None:
        ctrl.sendall(encode_line({"type": "importError", "error": err}))
        return 1
    z = Zygote(ctrl, code_dir, fn, routers, pod_log)
    z.send({"type": "ready", "hasCheck": fn[1] is not None, "pid": os.getpid()})
    return z.loop(buf)


if __name__ == "__main__":
    sys.exit(main())
