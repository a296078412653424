import ctypes
import os
import sys
import threading
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
    if arg == "exit-later":
        # The worker dies after answering, while idle in the pool.
        threading.Thread(target=lambda: (time.sleep(0.2), os._exit(4))).start()
        return os.getpid()
    if arg == "chatty":
        print("x" * (3 << 20))
    return "ok " + arg
