# Cython twin of sse_writer.SSEEncoder (event dict -> ``data: <json>\n\n``).
#
# C strategy: only the common case runs here, and it is the pure twin's own
# steps without the Python frames: an exact dict with a known str ``type``,
# no ``None`` among its top-level values (25 event types) or no ``:null`` in
# its JSON (the 6 with nested shapes), serialized by the same orjson call, the
# SSE framing written into ONE output allocation. Everything else (a value to
# omit, an unknown or missing type, anything orjson refuses) is handed to
# sse_writer, which writes it or raises its EncodeError, so both twins give the
# same bytes and the same errors by construction.

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE

import orjson as _sse_orjson

from agui_wire._codec import sse_writer as _sse_py

cdef extern from "Python.h":
    PyObject* _sse_dict_get "PyDict_GetItemWithError"(PyObject*, PyObject*)

cdef dict _SSE_SHAPES = _sse_py._EVENTS         # type -> (walk, nested)
cdef object _SSE_DUMPS = _sse_orjson.dumps
cdef object _SSE_DEFAULT = _sse_py._default
cdef object _SSE_ERROR = _sse_orjson.JSONEncodeError
cdef object _SSE_TYPE = _en_key("type")
cdef Py_ssize_t _sse_fallback_count = 0


def _sse_fallbacks():
    """Events handed to sse_writer since import (a value to omit, errors, exotic input)."""
    return _sse_fallback_count


cdef object _sse_slow(object slow, object event):
    global _sse_fallback_count
    _sse_fallback_count += 1
    return slow.encode(event)


cdef object _sse_json(object event):
    """The event's JSON when the common case applies, else None."""
    cdef PyObject* etype
    cdef PyObject* shape
    cdef PyObject* key
    cdef PyObject* value
    cdef Py_ssize_t pos = 0
    if not _en_is_dict(<PyObject*>event):
        return None
    etype = _sse_dict_get(<PyObject*>event, <PyObject*>_SSE_TYPE)
    if etype == NULL or not _en_is_exact_str(etype) or _en_str_len(etype) == 0:
        _en_err_clear()
        return None
    shape = _sse_dict_get(<PyObject*>_SSE_SHAPES, etype)
    if shape == NULL:
        _en_err_clear()
        return None
    nested = (<tuple>shape)[1]
    if not nested:
        while _en_dict_next(<PyObject*>event, &pos, &key, &value):
            if value == _EN_NONE:
                return None
    try:
        data = _SSE_DUMPS(event, _SSE_DEFAULT)
    except _SSE_ERROR:
        return None
    if nested and b":null" in data:
        return None
    return data


cdef object _sse_message(object data):
    cdef Py_ssize_t n = PyBytes_GET_SIZE(data)
    out = _en_bytes(NULL, n + 8)
    cdef char* buf = PyBytes_AS_STRING(out)
    memcpy(buf, b"data: ", 6)
    memcpy(buf + 6, PyBytes_AS_STRING(data), n)
    buf[n + 6] = 10
    buf[n + 7] = 10
    return out


@cython.binding(False)     # a plain builtin: the cheapest call CPython has
def encode_sse(event, *, id=None):
    """encode_sse(event, *, id=None) -> bytes

    One SSE event: ``data: <json>\\n\\n`` (with ``id: <id>`` first if given).

    ``event`` is a dict shaped as ``@ag-ui/core`` JSON, or an official SDK pydantic
    event (``proto_writer.as_event_dict``). ``id`` (for resumption with
    ``Last-Event-ID``) must not contain CR, LF or NUL.
    """
    global _sse_fallback_count
    if type(event) is not dict:
        event = _en_py.as_event_dict(event)
    if id is None:
        data = _sse_json(event)
        if data is not None:
            return _sse_message(data)
    _sse_fallback_count += 1
    return _sse_py.encode_sse(event, id=id)


cdef class SSEEncoder:
    """SSEEncoder(*, convert=None)

    ``encode_sse`` (without ids) for a caller that encodes event after event
    (``EventEncoder``): ``.encode(event)`` is one C call. An event that is not a
    ``dict`` goes through ``convert`` first; ``convert=None`` leaves it as is.
    """

    cdef object convert
    cdef object slow

    def __init__(self, *, convert=None):
        self.convert = convert
        self.slow = _sse_py.SSEEncoder()

    def encode(self, event):
        """encode(event) -> bytes: one SSE message."""
        if type(event) is not dict and self.convert is not None:
            event = self.convert(event)
        data = _sse_json(event)
        if data is None:
            return _sse_slow(self.slow, event)
        return _sse_message(data)

    def encode_many(self, events):
        """encode_many(events) -> bytes: several SSE messages, concatenated."""
        # Each message is an exact-size bytes object (orjson's own output, which
        # is over-allocated, is dropped at once), joined at the end.
        cdef list out = []
        convert = self.convert
        slow = self.slow
        for event in events:
            if type(event) is not dict and convert is not None:
                event = convert(event)
            data = _sse_json(event)
            out.append(_sse_slow(slow, event) if data is None else _sse_message(data))
        return b"".join(out)
