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
/dev/null and fd 1 is the worker's stderr, so nothing user code prints or
reads, even through os.write or a subprocess, can touch the protocol.
"""

import asyncio
import contextlib
import importlib.util
import inspect
import io
import json
import os
import sys
import traceback

# Captured output of one call is cut after this many characters so a chatty
# function cannot exhaust memory.
MAX_OUTPUT_CHARS = 1 << 20

WORKER_FILE = os.path.abspath(__file__)


class CappedOutput(io.StringIO):
    """A StringIO that keeps the first MAX_OUTPUT_CHARS characters."""

    def __init__(self, limit):
        super().__init__()
        self._limit = limit
        self._kept = 0
        self._dropped = 0

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not " + type(s).__name__)
        room = self._limit - self._kept
        if room >= len(s):
            self._kept += len(s)
            return super().write(s)
        if room > 0:
            super().write(s[:room])
            self._kept += room
        self._dropped += len(s) - max(room, 0)
        return len(s)

    def text(self):
        v = self.getvalue()
        if self._dropped:
            v += "\n[output truncated: %d characters dropped]\n" % self._dropped
        return v


def is_worker_frame(frame):
    return frame.filename == WORKER_FILE or frame.filename.startswith("<frozen importlib")


def error_of(e):
    """Message, type and trace of e, the trace starting in user code."""
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
    current call's buffer, and outside calls to the real stream (the pod
    log). Unlike contextlib.redirect_stdout this also catches writers that
    kept a reference to the stream, such as a logging handler set up at
    import."""

    def __init__(self, real):
        super().__init__()
        self.real = real
        self.target = None

    def write(self, s):
        target = self.target
        if target is None:
            return self.real.write(s)
        return target.write(s)

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
    for r in routers:
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


def call(run, check, req, routers, with_event=False):
    out = CappedOutput(MAX_OUTPUT_CHARS)
    reply = {"type": "result", "id": req["id"], "result": "", "check": None, "error": None}
    with captured(out, routers):
        try:
            if with_event:
                ret = run(event_of(req), req.get("context") or {})
            else:
                ret = run(req["arg"])
            if inspect.iscoroutine(ret):
                ret = asyncio.run(ret)
            reply["result"] = to_str(ret)
            if check is not None:
                ok = check(reply["result"])
                if inspect.iscoroutine(ok):
                    ok = asyncio.run(ok)
                reply["check"] = bool(ok)
        except BaseException as e:  # SystemExit too: a call must not end the worker
            reply["error"] = error_of(e)
    reply["output"] = out.text()
    return reply


def main():
    code_dir = os.path.abspath(sys.argv[1])
    proto_in = os.fdopen(os.dup(0), "rb")
    proto_out = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    routers = (Router(sys.stdout), Router(sys.stderr))
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
    send({"type": "ready", "hasCheck": check is not None, "pid": os.getpid()})

    with_event = takes_event(run)
    for line in proto_in:
        send(call(run, check, json.loads(line), routers, with_event))
    return 0


if __name__ == "__main__":
    sys.exit(main())
