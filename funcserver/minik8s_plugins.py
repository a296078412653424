"""Plugins around every call (seed 000, OpenFunction's functions framework).

A plugin has a name, a version, a pre hook run before the function and a
post hook run after it (and after check), in the order the function
declares them (spec.plugins.pre and .post). Plugins share state within one
call: ctx.set(field, value) keeps a value as the running plugin's, and
ctx.plugin(name).get(field) (or ctx.get(field), the latest of any plugin)
reads it. A failing pre hook fails the call naming the plugin, and the
function does not run; a failing post hook is recorded on the call.

Built-ins: tracing, metrics, log-context. A user plugin is a module of the
function's files (NAME.py) defining pre(ctx) and/or post(ctx), and maybe
NAME and VERSION.
"""

import importlib
import logging
import os
import random
import time

_ids = random.Random()


def span_id():
    """A random span id; ids need no cryptographic strength, only to differ."""
    return "%016x" % (_ids.getrandbits(64) or 1)


class Context:
    """What plugins see of one call."""

    __slots__ = ("context", "function", "instance_id", "step", "event", "arg", "result", "error",
                 "spans", "metrics", "trace_id", "run_span_id", "_plugins", "_state", "_latest", "current", "ran")

    def __init__(self, req, plugins):
        c = req.get("context") or {}
        self.context = c
        self.function = c.get("function-name", "")
        self.instance_id = c.get("instance-id", "")
        self.step = c.get("step", 0)
        self.event = req.get("event") or {}
        self.arg = req.get("arg", "")
        self.result = None
        self.error = None
        self.spans = []
        self.metrics = None
        # The run's trace and span once the tracing plugin started them:
        # plugin hooks after it become spans under the run's.
        self.trace_id = None
        self.run_span_id = None
        self._plugins = plugins
        self._state = {}
        self._latest = {}
        self.current = None
        # The plugins whose pre hook ran.
        self.ran = []

    def set(self, field, value):
        state = self._state.get(self.current)
        if state is None:
            state = self._state[self.current] = {}
        state[field] = value
        self._latest[field] = value

    def set_all(self, fields):
        """Sets several fields at once, as set does each."""
        state = self._state.get(self.current)
        if state is None:
            state = self._state[self.current] = {}
        state.update(fields)
        self._latest.update(fields)

    def get(self, field, default=None):
        return self._latest.get(field, default)

    def plugin(self, name):
        return View(name, self._plugins[name].version, self._state.get(name, {}))


class View:
    """A plugin as another sees it within one call."""

    __slots__ = ("name", "version", "_state")

    def __init__(self, name, version, state):
        self.name, self.version, self._state = name, version, state

    def get(self, field, default=None):
        return self._state.get(field, default)


class TraceEnv:
    """$TRACEPARENT during a call, for the function and the subprocesses it
    starts. os.environ[...] = value would leak: glibc's setenv keeps every
    value it was ever given, for good (about 110 bytes a call). So the
    worker puts one buffer of its own into the C environment with putenv,
    which keeps the pointer and copies nothing, and rewrites its bytes for
    each call: no allocation and no call into C. Between calls it holds the
    all-zero traceparent, which W3C says to ignore (a subprocess started
    between calls joins no trace), and os.environ, which Python code reads,
    has no TRACEPARENT. A function that sets or unsets TRACEPARENT itself
    replaces the buffer in the C environment; the buffer is put back."""

    NAME = b"TRACEPARENT"
    # A traceparent is "00-" 32 hex "-" 16 hex "-01": 55 characters.
    SIZE = 55
    NONE = b"00-" + b"0" * 32 + b"-" + b"0" * 16 + b"-00"

    def __init__(self):
        self.on = False
        self._value = None
        self._in_environ = False
        self._view = None
        try:
            import ctypes
            self._libc = ctypes.CDLL(None)
            self._buf = ctypes.create_string_buffer(self.NAME + b"=" + self.NONE)
            at = len(self.NAME) + 1
            self._view = memoryview(self._buf).cast("B")[at:at + self.SIZE]
        except (ImportError, OSError, AttributeError, TypeError):
            # Without ctypes, Python code still sees it in os.environ.
            self._view = None

    def set(self, traceparent):
        value = traceparent.encode("ascii")
        if self._view is not None and len(value) == self.SIZE:
            self._view[:] = value
            if not self._in_environ:
                self._libc.putenv(self._buf)
                self._in_environ = True
        os.environ._data[self.NAME] = value
        self._value = value
        self.on = True

    def clear(self):
        if not self.on:
            return
        self.on = False
        if self._view is not None:
            self._view[:] = self.NONE
            if os.environ._data.get(self.NAME) is not self._value:
                # The function set or unset TRACEPARENT: the C environment
                # holds its value now, or none. Its value goes; ours is put
                # back at the next call.
                self._libc.unsetenv(self.NAME)
                self._in_environ = False
        os.environ._data.pop(self.NAME, None)


TRACE_ENV = TraceEnv()


class Tracing:
    """The run inside the pod as a span of the call's W3C trace: child of
    the step's span (context["traceparent"]); the function sees its own
    span's traceparent in $TRACEPARENT (and its subprocesses too), so its
    outbound calls can join the trace."""

    name, version = "tracing", "1"

    def pre(self, ctx):
        tp = ctx.context.get("traceparent") or ""
        # version-trace_id-parent_id-flags, as tracing.Valid checks it in Go.
        if len(tp) == 55 and tp[2] == "-" and tp[35] == "-" and tp[52] == "-":
            trace_id, parent = tp[3:35], tp[36:52]
        else:
            trace_id, parent = "%032x" % (_ids.getrandbits(128) or 1), ""
        run_span = span_id()
        traceparent = "00-%s-%s-01" % (trace_id, run_span)
        ctx.set_all({"trace_id": trace_id, "span_id": run_span, "parent_span_id": parent,
                     "start_ns": time.time_ns(), "traceparent": traceparent})
        ctx.trace_id, ctx.run_span_id = trace_id, run_span
        TRACE_ENV.set(traceparent)

    def post(self, ctx):
        TRACE_ENV.clear()
        me = ctx._state.get("tracing")
        if not me or "span_id" not in me:
            return
        span = {"name": "run " + ctx.function, "traceId": me["trace_id"], "spanId": me["span_id"],
                "parentSpanId": me["parent_span_id"], "startNs": me["start_ns"], "endNs": time.time_ns()}
        if ctx.error:
            span["error"] = "%s: %s" % (ctx.error["type"], ctx.error["message"])
        ctx.spans.append(span)


class Metrics:
    """The run's duration and outcome, for the pod's /metrics."""

    name, version = "metrics", "1"

    def pre(self, ctx):
        ctx.set("start", time.monotonic())

    def post(self, ctx):
        start = ctx.plugin("metrics").get("start", time.monotonic())
        ctx.metrics = {"seconds": time.monotonic() - start, "outcome": "error" if ctx.error else "ok"}


class LogContext:
    """Every log record of the call names the instance and the step: as a
    prefix of its message, and as record.instance_id and record.step for
    formats that want them. The record factory is installed once, over
    whatever factory is current, and reads the call it serves from the
    plugin; pre and post only switch that call on and off, so a call pays
    nothing but for the records it makes."""

    name, version = "log-context", "1"

    def __init__(self):
        self.serving = None
        self.installed = False

    def install(self):
        if self.installed:
            return
        self.installed = True
        base = logging.getLogRecordFactory()

        def factory(*args, **kwargs):
            record = base(*args, **kwargs)
            ctx = self.serving
            if ctx is not None:
                record.instance_id, record.step = ctx.instance_id, ctx.step
                record.msg = "[%s step %s] %s" % (ctx.instance_id, ctx.step, record.msg)
            return record

        logging.setLogRecordFactory(factory)

    def pre(self, ctx):
        self.serving = ctx

    def post(self, ctx):
        self.serving = None


BUILTIN = {p.name: p for p in (Tracing(), Metrics(), LogContext())}


def end_call():
    """Undoes what built-ins set up for one call, whether or not their
    post hooks ran."""
    BUILTIN["log-context"].serving = None
    TRACE_ENV.clear()


class Module:
    """A user plugin: a module of the function's files."""

    def __init__(self, module_name):
        mod = importlib.import_module(module_name)
        self.name = getattr(mod, "NAME", module_name)
        self.version = str(getattr(mod, "VERSION", "0"))
        self.pre = getattr(mod, "pre", None)
        self.post = getattr(mod, "post", None)


def load(pre_names, post_names):
    """The plugins by name, and the pre and post hooks in order. A plugin
    listed in pre must define pre(ctx), one listed in post post(ctx)."""
    plugins = {}
    for name in list(pre_names) + list(post_names):
        if name not in plugins:
            plugins[name] = BUILTIN[name] if name in BUILTIN else Module(name)
    if "log-context" in plugins:
        plugins["log-context"].install()
    pre, post = [], []
    for names, hook, out in ((pre_names, "pre", pre), (post_names, "post", post)):
        for name in names:
            fn = getattr(plugins[name], hook, None)
            if not callable(fn):
                raise AttributeError("plugin %s defines no %s(ctx)" % (name, hook))
            out.append((name, fn))
    # A built-in's post ends what its pre began (the run's span, its
    # measure): named in pre only, as the README has tracing, it still
    # ends, after the listed post hooks and in the reverse order of pre
    # (first in, last out), so that the other hooks' spans fall inside
    # the run's.
    for name in reversed(list(dict.fromkeys(pre_names))):
        if name in BUILTIN and name not in post_names and callable(getattr(plugins[name], "post", None)):
            post.append((name, plugins[name].post))
    return plugins, pre, post


def names(env):
    return [n for n in os.environ.get(env, "").split(",") if n]
