def run(arg):
    return "hello " + arg
