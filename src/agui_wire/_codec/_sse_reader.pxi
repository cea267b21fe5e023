# Cython twin of sse_reader.plain_sse_blocks (the SSE reader's fast path) and of
# sse_reader.contract_holds (a decoded event's check).
#
# C strategy: the pure twin's loop with memcmp/memchr for the line and
# a memoryview over the chunk's own memory for orjson.loads (no copy; data
# under 2 KiB is copied to bytes instead, cheaper than a view); the same tests
# in the same order, so the same events and the same stopping byte. The chunk
# (exact bytes) outlives the views: orjson keeps none. The contract is checked by
# the SSE writer's walk writing nothing (_sw_holds); where it says no, the pure
# twin decides and words it (a block the fast path stops at goes to the general
# path, which asks sse_reader).

# uses _proto_writer*.pxi: _en_lookup, _en_types
# uses _sse_writer*.pxi: _sw_holds

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.string cimport memchr, memcmp

import orjson as _sse_orjson

cdef object _SSE_BLOCK_TYPE = "type"     # interned: Cython interns identifier-like literals
cdef object _SSE_LOADS = _sse_orjson.loads
# data shorter than this is handed to orjson as a bytes copy, longer as a view
cdef Py_ssize_t _SSE_VIEW_MIN = 2048
cdef object _SSE_SYNTAX = _sse_orjson.JSONDecodeError


def plain_sse_blocks(bytes chunk not None, Py_ssize_t pos, Py_ssize_t max_size,
                     Py_ssize_t max_brackets, bint validate=True):
    """plain_sse_blocks(chunk, pos, max_size, max_brackets, validate=True) -> (events, end)

    The SSE reader's fast path (contract: sse_reader.plain_sse_blocks)."""
    cdef list events = []
    if pos < 0:
        raise ValueError("pos must be >= 0")
    pos = _sse_plain_blocks(PyBytes_AS_STRING(chunk), PyBytes_GET_SIZE(chunk), pos, max_size,
                            max_brackets, events, validate)
    return events, pos


def contract_holds(event):
    """contract_holds(event) -> bool

    Whether @ag-ui/core's schemas accept the decoded event (of a known type):
    sse_reader.contract_holds, in C; False also where only the pure twin can tell."""
    return _sw_holds(event)


cdef Py_ssize_t _sse_plain_blocks(char* buf, Py_ssize_t n, Py_ssize_t pos, Py_ssize_t max_size,
                                  Py_ssize_t max_brackets, list events, bint validate) except -1:
    # plain_sse_blocks on the n bytes at buf (which the caller keeps alive),
    # appending to events; returns where it stopped.
    cdef Py_ssize_t nl, i, brackets
    cdef const char* found
    cdef PyObject* etype
    while n - pos >= 6 and memcmp(buf + pos, b"data: ", 6) == 0:
        found = <const char*>memchr(buf + pos + 6, 10, n - pos - 6)
        if found == NULL:
            break
        nl = found - buf
        if nl + 1 >= n or buf[nl + 1] != 10 or nl - pos > max_size:
            break
        if nl - pos - 6 > max_brackets:
            brackets = 0
            for i in range(pos, nl):
                if buf[i] == 123 or buf[i] == 91:  # { [
                    brackets += 1
            if brackets > max_brackets:
                break
        try:
            if nl - pos - 6 < _SSE_VIEW_MIN:  # a small copy costs less than a view
                event = _SSE_LOADS(PyBytes_FromStringAndSize(buf + pos + 6, nl - pos - 6))
            else:
                event = _SSE_LOADS(capi.PyMemoryView_FromMemory(buf + pos + 6, nl - pos - 6, capi.PyBUF_READ))
        except _SSE_SYNTAX:
            break
        if type(event) is not dict:
            break
        if validate:
            if not _sw_holds(event):    # no type, one of a later protocol, or a fault
                break                   # the general path's
        else:
            etype = capi.PyDict_GetItemWithError(<PyObject*>event, <PyObject*>_SSE_BLOCK_TYPE)
            if etype == NULL or not capi.PyUnicode_CheckExact(etype) \
                    or _en_lookup(_en_types, etype) < 0:
                capi.PyErr_Clear()
                break   # no type, or one of a later protocol: the general path's
        events.append(event)
        pos = nl + 2
    return pos
