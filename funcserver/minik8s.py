"""What a function may ask of the platform during a call.

    import minik8s
    minik8s.send("audit", {"order": 42})

send(NAME, data) sends data through the function's output NAME
(spec.outputs: another function, called asynchronously as a child of this
call; a NATS subject; or a URL). data is str or bytes as they are, None as
"", anything else JSON-encoded, as a result is. send returns once the
platform has delivered the data (a function's call stored, a message
published, the URL's 2xx answer), and raises OutputError when it could not,
saying why; each delivery is recorded on the step. It raises at once for
what is wrong with the send itself: an output the function does not have,
data over the limit, too many sends in one call. (Called by a platform
that delivers only after the run, sends go out when the run returns, and a
run that raises sends nothing.)
"""

import json

# As the platform's limit on an argument: the data is one.
MAX_SEND_BYTES = 512 << 10
MAX_SENDS = 100


class OutputError(Exception):
    """A send the platform cannot take."""


_outputs = None
_sends = None
_deliver = None


def begin_call(outputs, deliver=None):
    """Called by the worker as a call starts, with its outputs' names and,
    when the platform delivers sends during the call, deliver(send), which
    returns None once delivered, or why it was not."""
    global _outputs, _sends, _deliver
    _outputs, _sends, _deliver = list(outputs or []), [], deliver


def end_call():
    """Called by the worker as a call ends: what it sent and is still to
    be delivered."""
    global _outputs, _sends, _deliver
    sends, _outputs, _sends, _deliver = _sends or [], None, None, None
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
    if _deliver is None:
        _sends.append({"output": name, "data": data})
        return
    # Counted, not kept: it is the platform's once delivered.
    _sends.append(None)
    err = _deliver({"output": name, "data": data})
    if err:
        raise OutputError("sending to %r: %s" % (name, err))
