# Imports once; while the file "imported" exists, a later import waits a
# moment and then fails. "exit-soon" ends the zygote that imported it, and
# so every worker: a replacement then needs a fresh import.
import os
import signal
import time

if os.path.exists("imported"):
    time.sleep(0.5)
    raise RuntimeError("import refused")
open("imported", "w").close()


def run(arg):
    if arg == "exit-soon":
        time.sleep(0.2)
        os.kill(os.getppid(), signal.SIGKILL)
        os._exit(1)
    return "ok " + arg
