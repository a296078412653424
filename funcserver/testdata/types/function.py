import decimal

VALUES = {
    "str": "plain",
    "none": None,
    "int": 42,
    "float": 1.5,
    "bool": True,
    "list": [1, "two", None],
    "dict": {"a": 1, "b": [True]},
    "set": {7},
    "decimal": decimal.Decimal("1.10"),
    "unicode": "h\u00e9llo \u2713",
}


def run(arg):
    return VALUES[arg]
