import logging
import os

logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")


def run(arg):
    logging.info("running %s", arg)
    if arg == "boom":
        raise ValueError("boom")
    return arg + " traceparent=" + os.environ.get("TRACEPARENT", "")
