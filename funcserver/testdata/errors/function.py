import ctypes
import os
import sys
import time


def helper(arg):
    raise ValueError("bad " + arg)


def run(arg):
    print("before", arg)
    if arg.startswith("raise"):
        helper(arg)
    if arg == "exit":
        os._exit(3)
    if arg == "segv":
        ctypes.string_at(0)
    if arg == "sysexit":
        sys.exit(2)
    if arg == "sleep":
        time.sleep(3600)
    if arg == "wait":
        open("waiting", "w").close()
        while not os.path.exists("release"):
            time.sleep(0.01)
    if arg == "pid":
        return os.getpid()
    return "ok " + arg
