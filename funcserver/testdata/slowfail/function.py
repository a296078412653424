# Imports once; while the file "imported" exists, a later import waits a
# moment and then fails.
import os
import time

if os.path.exists("imported"):
    time.sleep(0.5)
    raise RuntimeError("import refused")
open("imported", "w").close()


def run(arg):
    if arg == "exit-soon":
        time.sleep(0.2)
        os._exit(1)
    return "ok " + arg
