"""What a function may ask of the platform during a call.

    import minik8s
    minik8s.send("audit", {"order": 42})

send(NAME, data) sends data through the function's output NAME
(spec.outputs: another function, called asynchronously as a child of this
call; a NATS subject; or a URL). data is str or bytes as they are, None as
"", anything else JSON-encoded, as a result is. What a call sends goes out
when its run returns, and each delivery is recorded on the step; a run that
raises sends nothing. send raises at once for what is wrong with the send
itself: an output the function does not have, data over the limit, too
many sends in one call.
"""

import json

# As the platform's limit on an argument: the data is one.
MAX_SEND_BYTES = 512 << 10
MAX_SENDS = 100


class OutputError(Exception):
    """A send the platform cannot take."""


_outputs = None
_sends = None


def begin_call(outputs):
    """Called by the worker as a call starts, with its outputs' names."""
    global _outputs, _sends
    _outputs, _sends = list(outputs or []), []


def end_call():
    """Called by the worker as a call ends: what it sent."""
    global _outputs, _sends
    sends, _outputs, _sends = _sends or [], None, None
    return sends


def send(name, data):
    if _sends is None:
        raise OutputError("minik8s.send is for a call: it was called outside one")
    if name not in _outputs:
        have = ", ".join(_outputs) if _outputs else "none (spec.outputs)"
        raise OutputError("the function has no output %r; its outputs: %s" % (name, have))
    if isinstance(data, (bytes, bytearray, memoryview)):
        data = bytes(data)
    elif data is None:
        data = ""
    elif not isinstance(data, str):
        data = json.dumps(data)
    size = len(data.encode("utf-8")) if isinstance(data, str) else len(data)
    if size > MAX_SEND_BYTES:
        raise OutputError("the data sent to %r is %d bytes, more than the limit of %d" % (name, size, MAX_SEND_BYTES))
    if len(_sends) >= MAX_SENDS:
        raise OutputError("a call sends at most %d times" % MAX_SENDS)
    _sends.append({"output": name, "data": data})
