# check gets run's result as the string the next function would get.
def run(arg):
    return {"answer": arg}


def check(ret):
    if not isinstance(ret, str):
        raise TypeError("check got a " + type(ret).__name__)
    if ret == '{"answer": "boom"}':
        raise RuntimeError("check cannot decide")
    return ret == '{"answer": "yes"}'
