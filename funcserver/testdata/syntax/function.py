def run(arg)
    return arg
