import os
import sys
import time


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
    print(arg, "second")
    return arg
