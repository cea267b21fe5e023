# Cython twin of sse_writer.SSEEncoder (event dict -> ``data: <json>\n\n``).
#
# C strategy: the pure twin's steps for the common event, without the Python
# frames: an exact dict with a non-empty exact str ``type``, scanned in C
# (_sse_scan = sse_writer._scan: exact JSON types only, finite floats, at most
# 254 deep, so nothing orjson could crash on), then the same orjson call, the
# optional nulls omitted by sse_writer's own walkers, and the SSE framing
# written into ONE output allocation. A value the scan refuses (or, after
# orjson refused the event, that _sse_scan in locate mode = sse_writer._locate
# finds) raises sse_writer._refusal's EncodeError at the pointer found here.
# Everything else (not a dict, no str type, tuples, subclasses, other
# mappings, more depth) is handed to sse_writer, which normalizes it. So both
# twins give the same bytes and the same errors, each worded once.

cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.math cimport isfinite
from libc.stdint cimport uint16_t, uint32_t
from libc.string cimport memcpy, memset

from collections.abc import Mapping as _SSE_MAPPING

import orjson as _sse_orjson

from agui_wire._codec import seam as _seam

cdef dict _SSE_SHAPES = _seam.SSE_SHAPES         # type -> (walk, nested)
cdef object _SSE_DUMPS = _sse_orjson.dumps
cdef object _SSE_ERROR = _sse_orjson.JSONEncodeError
cdef object _SSE_REFUSAL = _seam.sse_refusal
cdef object _SSE_TYPE = "type"           # interned: Cython interns identifier-like literals
cdef int _SSE_DUMPS_MAX_NESTING = _seam.DUMPS_MAX_NESTING
cdef int _SSE_DEEP = _seam.SCAN_DEEP
cdef Py_ssize_t _sse_fallback_count = 0

# _sse_scan's answers
cdef enum:
    _SSE_OK = 0      # orjson.dumps may write it as it is
    _SSE_SLOW = 1    # sse_writer normalizes it first
    _SSE_BAD = 2     # a value JSON cannot hold: bad[0]
    _SSE_BAD_KEY = 3 # an object key JSON cannot hold: bad[0]


def _sse_fallbacks():
    """Events handed to sse_writer since import (tuples, subclasses, other
    mappings, deep nesting, no str type...)."""
    return _sse_fallback_count


cdef object _sse_slow(object slow, object event):
    global _sse_fallback_count
    _sse_fallback_count += 1
    return slow.encode(event)


cdef bint _sse_has_surrogate(PyObject* s):
    """Whether the str holds a lone surrogate (only 2- and 4-byte kinds can)."""
    cdef int kind = capi.PyUnicode_KIND(s)
    cdef Py_ssize_t i, n = capi.PyUnicode_GET_LENGTH(s)
    cdef uint16_t* u2
    cdef uint32_t* u4
    if kind == 2:
        u2 = <uint16_t*>capi.PyUnicode_DATA(s)
        for i in range(n):
            if 0xD800 <= u2[i] <= 0xDFFF:
                return True
    elif kind == 4:
        u4 = <uint32_t*>capi.PyUnicode_DATA(s)
        for i in range(n):
            if 0xD800 <= u4[i] <= 0xDFFF:
                return True
    return False


cdef bint _sse_int_too_big(PyObject* n):
    """Whether orjson refuses the exact int: outside [-2**63, 2**64)."""
    cdef int overflow = 0
    capi.PyLong_AsLongLongAndOverflow(n, &overflow)
    if overflow == 0:
        return False
    if overflow < 0:
        return True
    capi.PyLong_AsUnsignedLongLong(n)
    if capi.PyErr_Occurred() != NULL:
        capi.PyErr_Clear()
        return True
    return False


cdef int _sse_value(
    PyObject* value, int depth, bint locate, list path, list bad, agw_ids* deep
) except -1:
    """One value inside a container at ``depth``: sse_writer._scan's rules (and in
    locate mode _locate's checks of strings and integers). ``deep``: the containers
    open _SSE_DEEP or more below the event, by identity (sse_writer._scan's)."""
    cdef int r
    if capi.PyUnicode_CheckExact(value):
        if locate and _sse_has_surrogate(value):
            bad.append(<object>value)
            return _SSE_BAD
        return _SSE_OK
    if capi.PyDict_CheckExact(value) or capi.PyList_CheckExact(value):
        if depth >= _SSE_DUMPS_MAX_NESTING:
            return _SSE_SLOW
        if depth >= _SSE_DEEP and agw_ids_add(deep, value) != 0:
            return _SSE_SLOW    # a cycle (or no memory): sse_writer._normalize words it
        child = <object>value  # held: Python code may run inside (isinstance)
        r = _sse_scan(child, depth + 1, locate, path, bad, deep)
        if depth >= _SSE_DEEP:
            agw_ids_del(deep, value)
        return r
    if capi.PyLong_CheckExact(value):
        if locate and _sse_int_too_big(value):
            bad.append(<object>value)
            return _SSE_BAD
        return _SSE_OK
    if value == capi.Py_None or value == capi.Py_True or value == capi.Py_False:
        return _SSE_OK
    if capi.PyFloat_CheckExact(value):
        if isfinite(capi.PyFloat_AS_DOUBLE(value)):
            return _SSE_OK
        bad.append(<object>value)
        return _SSE_BAD
    if (capi.PyUnicode_Check(value) or capi.PyLong_Check(value) or capi.PyFloat_Check(value) or capi.PyDict_Check(value)
            or capi.PyList_Check(value) or capi.PyTuple_Check(value)):
        return _SSE_SLOW
    v = <object>value  # a reference of our own: isinstance may run Python code
    if isinstance(v, _SSE_MAPPING):
        return _SSE_SLOW
    bad.append(v)
    return _SSE_BAD


cdef int _sse_scan(
    object container, int depth, bint locate, list path, list bad, agw_ids* deep
) except -1:
    """sse_writer._scan (and with ``locate``, _locate) of an exact dict or list
    nested ``depth`` deep: OK, SLOW, or BAD/BAD_KEY with the offending value in
    ``bad`` and, on the way back up, the keys to it appended to ``path`` (last
    key first). Entry by entry, depth first: the order of the pure twin's walks,
    so both meet the same value first."""
    cdef PyObject* key
    cdef PyObject* value
    cdef Py_ssize_t pos = 0, i = 0
    cdef int r
    if capi.PyDict_CheckExact(<PyObject*>container):
        while capi.PyDict_Next(<PyObject*>container, &pos, &key, &value):
            if not locate and not capi.PyUnicode_CheckExact(key):
                return _SSE_SLOW  # sse_writer._normalize meets the key before its value
            if locate and not (capi.PyUnicode_CheckExact(key) and not _sse_has_surrogate(key)):
                if not capi.PyUnicode_CheckExact(key) and capi.PyUnicode_Check(key):
                    return _SSE_SLOW  # a str subclass key: sse_writer normalizes it
                bad.append(<object>key)
                return _SSE_BAD_KEY
            k = <object>key  # held: the value's scan may run Python code (isinstance)
            r = _sse_value(value, depth, locate, path, bad, deep)
            if r != _SSE_OK:
                if r >= _SSE_BAD:
                    path.append(k)
                return r
    else:
        while i < capi.PyList_GET_SIZE(<PyObject*>container):  # re-read: Python code may run
            r = _sse_value(
                capi.PyList_GET_ITEM(<PyObject*>container, i), depth, locate, path, bad, deep
            )
            if r != _SSE_OK:
                if r >= _SSE_BAD:
                    path.append(i)
                return r
            i += 1
    return _SSE_OK


cdef str _sse_pointer(list path):
    """_jsonnames.json_pointer of ``path`` read backwards (the scan appends the
    keys last first), built here: a refusal's cost is mostly its message."""
    cdef Py_ssize_t i
    cdef str s
    cdef list parts = []
    for i in range(len(path) - 1, -1, -1):
        k = path[i]
        s = <str>k if type(k) is str else str(k)
        if "~" in s or "/" in s:
            s = s.replace("~", "~0").replace("/", "~1")
        parts.append(s)
    return "/" + "/".join(parts) if parts else ""


cdef object _sse_refuse(int r, list path, list bad, object etype):
    """The EncodeError of a value the scan refused (worded by sse_writer)."""
    return _SSE_REFUSAL(bad[0], r == _SSE_BAD_KEY, _sse_pointer(path), etype)


cdef object _sse_json(object event):
    """The event's JSON when the common case applies, else None (sse_writer's)."""
    cdef PyObject* etype
    cdef PyObject* shape
    cdef PyObject* key
    cdef PyObject* value
    cdef Py_ssize_t pos = 0
    cdef int r
    cdef list path
    cdef list bad
    cdef agw_ids deep
    if not capi.PyDict_CheckExact(<PyObject*>event):
        return None
    etype = capi.PyDict_GetItemWithError(<PyObject*>event, <PyObject*>_SSE_TYPE)
    if etype == NULL or not capi.PyUnicode_CheckExact(etype) or capi.PyUnicode_GET_LENGTH(etype) == 0:
        capi.PyErr_Clear()
        return None
    path, bad = [], []
    memset(&deep, 0, sizeof(agw_ids))
    try:
        r = _sse_scan(event, 1, False, path, bad, &deep)
    finally:
        agw_ids_free(&deep)
    if r == _SSE_SLOW:
        return None
    if r != _SSE_OK:
        raise _sse_refuse(r, path, bad, <object>etype)
    shape = capi.PyDict_GetItemWithError(<PyObject*>_SSE_SHAPES, etype)
    try:
        if shape == NULL:
            capi.PyErr_Clear()
            return _SSE_DUMPS(event)
        walk, nested = <tuple>shape
        if not nested:
            while capi.PyDict_Next(<PyObject*>event, &pos, &key, &value):
                if value == capi.Py_None:
                    return _SSE_DUMPS(walk(event))
            return _SSE_DUMPS(event)
        data = _SSE_DUMPS(event)
        if b":null" in data:
            walked = walk(event)
            if walked is not event:
                data = _SSE_DUMPS(walked)
        return data
    except _SSE_ERROR:
        pass
    try:
        r = _sse_scan(event, 1, True, path, bad, &deep)
    finally:
        agw_ids_free(&deep)
    if r >= _SSE_BAD:
        raise _sse_refuse(r, path, bad, <object>etype)
    return None  # a str subclass key


cdef object _sse_message(object data):
    cdef Py_ssize_t n = PyBytes_GET_SIZE(data)
    out = capi.PyBytes_FromStringAndSize(NULL, n + 8)
    cdef char* buf = PyBytes_AS_STRING(out)
    memcpy(buf, b"data: ", 6)
    memcpy(buf + 6, PyBytes_AS_STRING(data), n)
    buf[n + 6] = 10
    buf[n + 7] = 10
    return out


@cython.binding(False)     # a plain builtin: the cheapest call CPython has
def encode_sse(event, *, id=None):
    """One SSE event: ``data: <json>\\n\\n`` (with ``id: <id>`` first if given).

    ``event`` is a dict shaped as ``@ag-ui/core`` JSON, or an official SDK pydantic
    event (``proto_writer.as_event_dict``). ``id`` (for resumption with
    ``Last-Event-ID``) must not contain CR, LF or NUL.
    """
    global _sse_fallback_count
    if type(event) is not dict:
        event = _seam.as_event_dict(event)
    if id is None:
        data = _sse_json(event)
        if data is not None:
            return _sse_message(data)
    _sse_fallback_count += 1
    return _seam.encode_sse(event, id=id)


cdef class SSEEncoder:
    """SSEEncoder(*, convert=None)
--

    ``encode_sse`` (without ids) for a caller that encodes event after event
    (``EventEncoder``): ``.encode(event)`` is one C call. An event that is not a
    ``dict`` goes through ``convert`` first; ``convert=None`` leaves it as is.
    """

    cdef object convert
    cdef object slow

    def __init__(self, *, convert=None):
        self.convert = convert
        self.slow = _seam.SSEEncoder()

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
