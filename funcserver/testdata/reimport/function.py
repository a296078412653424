# Imports once; a second import fails while the file "imported" exists.
import os

if os.path.exists("imported"):
    raise RuntimeError("second import refused")
open("imported", "w").close()


def run(arg):
    if arg == "exit":
        os._exit(1)
    return "ok " + arg
