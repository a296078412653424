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
        self._plugins = plugins
        self._state = {}
        self._latest = {}
        self.current = None
        # The plugins whose pre hook ran.
        self.ran = []

    def set(self, field, value):
        self._state.setdefault(self.current, {})[field] = value
        self._latest[field] = value

    def get(self, field, default=None):
        return self._latest.get(field, default)

    def plugin(self, name):
        return View(name, self._plugins[name].version, self._state.get(name, {}))


class View:
    """A plugin as another sees it within one call."""

    def __init__(self, name, version, state):
        self.name, self.version, self._state = name, version, state

    def get(self, field, default=None):
        return self._state.get(field, default)


class Tracing:
    """The run inside the pod as a span of the call's W3C trace: child of
    the step's span (context["traceparent"]); the function sees its own
    span's traceparent in $TRACEPARENT (and its subprocesses too), so its
    outbound calls can join the trace."""

    name, version = "tracing", "1"

    def pre(self, ctx):
        parts = (ctx.context.get("traceparent") or "").split("-")
        valid = len(parts) == 4 and len(parts[1]) == 32 and len(parts[2]) == 16
        trace_id = parts[1] if valid else "%032x" % (_ids.getrandbits(128) or 1)
        run_span = span_id()
        ctx.set("trace_id", trace_id)
        ctx.set("span_id", run_span)
        ctx.set("parent_span_id", parts[2] if valid else "")
        ctx.set("start_ns", time.time_ns())
        ctx.set("traceparent", "00-%s-%s-01" % (trace_id, run_span))
        os.environ["TRACEPARENT"] = ctx.get("traceparent")

    def post(self, ctx):
        os.environ.pop("TRACEPARENT", None)
        me = ctx.plugin("tracing")
        if me.get("span_id") is None:
            return
        ctx.spans.append({
            "name": "run " + ctx.function,
            "traceId": me.get("trace_id"),
            "spanId": me.get("span_id"),
            "parentSpanId": me.get("parent_span_id"),
            "startNs": me.get("start_ns"),
            "endNs": time.time_ns(),
            "error": "%s: %s" % (ctx.error["type"], ctx.error["message"]) if ctx.error else "",
        })


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
    formats that want them. The worker puts the record factory back after
    each call."""

    name, version = "log-context", "1"

    def pre(self, ctx):
        prefix = "[%s step %s] " % (ctx.instance_id, ctx.step)
        base = logging.getLogRecordFactory()

        def factory(*args, **kwargs):
            record = base(*args, **kwargs)
            record.instance_id, record.step = ctx.instance_id, ctx.step
            record.msg = prefix + str(record.msg)
            return record

        logging.setLogRecordFactory(factory)

    def post(self, ctx):
        pass


BUILTIN = {p.name: p for p in (Tracing(), Metrics(), LogContext())}


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
    pre, post = [], []
    for names, hook, out in ((pre_names, "pre", pre), (post_names, "post", post)):
        for name in names:
            fn = getattr(plugins[name], hook, None)
            if not callable(fn):
                raise AttributeError("plugin %s defines no %s(ctx)" % (name, hook))
            out.append((name, fn))
    return plugins, pre, post


def names(env):
    return [n for n in os.environ.get(env, "").split(",") if n]
