# Every import appends the importing process's pid.
import os

with open("imports.log", "a") as f:
    f.write("%d\n" % os.getpid())


def run(arg):
    return str(os.getpid())
