with open("state.txt") as f:
    STATE = f.read()


def run(arg):
    return STATE
