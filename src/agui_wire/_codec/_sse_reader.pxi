# Cython twin of sse_reader.plain_sse_blocks (the SSE reader's fast path).
#
# C strategy: the pure twin's loop with memcmp/memchr for the line and
# a memoryview over the chunk's own memory for orjson.loads (no slice object,
# no copy); the same tests in the same order, so the same events and the same
# stopping byte. The chunk (exact bytes) outlives the views: orjson keeps none.

from libc.string cimport memchr, memcmp

cdef extern from "Python.h":
    object _sse_memory "PyMemoryView_FromMemory"(char*, Py_ssize_t, int)
    int _SSE_BUF_READ "PyBUF_READ"

cdef object _SSE_LOADS = _sse_orjson.loads
cdef object _SSE_SYNTAX = _sse_orjson.JSONDecodeError


def plain_sse_blocks(bytes chunk not None, Py_ssize_t pos, Py_ssize_t max_size, Py_ssize_t max_brackets):
    """plain_sse_blocks(chunk, pos, max_size, max_brackets) -> (events, end)

    The SSE reader's fast path (contract: sse_reader.plain_sse_blocks)."""
    cdef char* buf = PyBytes_AS_STRING(chunk)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(chunk)
    cdef Py_ssize_t nl, i, brackets
    cdef const char* found
    cdef PyObject* etype
    cdef list events = []
    if pos < 0:
        raise ValueError("pos must be >= 0")
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
            event = _SSE_LOADS(_sse_memory(buf + pos + 6, nl - pos - 6, _SSE_BUF_READ))
        except _SSE_SYNTAX:
            break
        if type(event) is not dict:
            break
        etype = _sse_dict_get(<PyObject*>event, <PyObject*>_SSE_TYPE)
        if etype == NULL or not _en_is_exact_str(etype) or _en_str_len(etype) == 0:
            _en_err_clear()
            break
        events.append(event)
        pos = nl + 2
    return events, pos
