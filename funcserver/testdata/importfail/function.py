import this_module_does_not_exist_anywhere


def run(arg):
    return arg
