"""A user plugin: notes the order hooks run in, reads the tracing plugin's
state, and fails where the argument asks it to."""

NAME = "audit"
VERSION = "2"


def pre(ctx):
    if ctx.arg == "fail-pre":
        raise RuntimeError("audit refuses " + ctx.arg)
    ctx.set("seen", "pre saw trace " + str(ctx.plugin("tracing").get("trace_id")))
    print("audit pre", ctx.instance_id, ctx.step)


def post(ctx):
    print("audit post", ctx.plugin("audit").get("seen"), "result", ctx.result, "error", bool(ctx.error))
    if ctx.arg == "fail-post":
        raise RuntimeError("audit post fails")
