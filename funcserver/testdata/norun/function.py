def handler(arg):
    return arg
