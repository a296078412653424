# Every import appends the importing process's pid; a call answers its
# worker's pid and parent pid.
import os

with open("imports.log", "a") as f:
    f.write("%d\n" % os.getpid())


def run(arg):
    return "%d %d" % (os.getpid(), os.getppid())
