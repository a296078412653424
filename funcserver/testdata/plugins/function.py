import logging
import os
import subprocess

logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")


def run(arg):
    logging.info("running %s", arg)
    if arg == "boom":
        raise ValueError("boom")
    # A subprocess inherits the same trace context.
    sub = subprocess.run(["sh", "-c", 'printf %s "$TRACEPARENT"'], capture_output=True, text=True).stdout
    return arg + " traceparent=" + os.environ.get("TRACEPARENT", "") + " sub=" + sub
