import logging
import os
import subprocess
import sys
import time

# A handler made at import keeps a reference to sys.stderr: its records
# still belong to the call that logs them.
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
log = logging.getLogger("fn")


def run(arg):
    print(arg, "first")
    print(arg, "to stderr", file=sys.stderr)
    # Barrier: both calls of the test are inside run at once, so their
    # prints interleave in time but must not mix in the answers.
    open("started-" + arg, "w").close()
    deadline = time.time() + 60
    while len([f for f in os.listdir(".") if f.startswith("started-")]) < 2:
        if time.time() > deadline:
            raise TimeoutError("the other call never started")
        time.sleep(0.01)
    log.info("%s logged", arg)
    os.write(1, (arg + " raw fd 1\n").encode())
    os.write(2, (arg + " raw fd 2\n").encode())
    subprocess.run(["echo", arg, "from a subprocess"], check=True)
    subprocess.run("echo " + arg + " from a shell >&2", shell=True, check=True)
    print(arg, "second")
    return arg
