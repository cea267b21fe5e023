# Cython twin of proto_reader.py, part 4 of 5: the entry point decode_payload, the
# decoder state it runs in, and its refusals (worded by proto_reader.fault_error from
# the fault recorded; strategy: _proto_reader_wire.pxi).

cimport cython
from cpython.buffer cimport PyBUF_SIMPLE
from libc.stdint cimport uint32_t, uint64_t
from libc.stdlib cimport free, malloc

import warnings as _de_warnings

from agui_wire._codec import seam as _seam


# -- the decoder state -----------------------------------------------------------------

cdef _DeState _de_main
cdef bint _de_main_busy = False
cdef unsigned long long _de_fallbacks = 0


cdef inline _DeState* _de_acquire() except NULL:
    # The module state, or a private one if it is in use (a finalizer run by
    # the garbage collector during a decode may decode too).
    global _de_main_busy
    if not _de_main_busy:
        _de_main_busy = True
        _de_main.nframes = 0
        _de_main.warns = NULL
        _de_main.fault.code = 0
        _de_main.fault.role = NULL
        return &_de_main
    return _de_acquire_slow()


cdef _DeState* _de_acquire_slow() except NULL:
    global _de_main_busy
    cdef _DeState* d
    if not _de_main_busy:
        _de_main_busy = True
        d = &_de_main
    else:
        d = <_DeState*>malloc(sizeof(_DeState))
        if d == NULL:
            raise MemoryError()
        d.frames = NULL
        d.cap = 0
    d.nframes = 0
    d.warns = NULL
    d.fault.code = 0
    d.fault.role = NULL
    return d


cdef inline void _de_release(_DeState* d) noexcept:
    global _de_main_busy
    if d.nframes:
        _de_unwind(d, 0)
    if d.warns != NULL:
        capi.Py_DECREF(d.warns)
        d.warns = NULL
    if d.fault.role != NULL:
        capi.Py_DECREF(d.fault.role)
        d.fault.role = NULL
    if d == &_de_main:
        _de_main_busy = False
        if d.cap > _DE_KEEP_FRAMES:
            free(d.frames)
            d.frames = NULL
            d.cap = 0
        return
    free(d.frames)
    free(d)


# -- options and the entry point -------------------------------------------------------

cdef object _DE_ERROR = "error"     # the same interned objects as the defaults
cdef object _DE_REPLACE = "replace"


@cython.binding(False)     # a plain builtin: the cheapest call CPython has
def decode_payload(data, *, invalid_utf8="error", max_depth=1024):
    """Decode one serialized ``ag_ui.Event`` (a frame's payload) to its JSON dict.
    """
    global _de_fallbacks
    cdef const char* errors
    cdef long depth
    cdef int overflow = 0
    cdef Py_buffer view
    cdef bint have_view = False
    cdef _de_ptr p
    cdef Py_ssize_t n
    cdef object out
    # Options taken as they are; anything else (odd types, invalid values: it
    # raises) is left to proto_reader.
    errors = NULL
    depth = -1
    if invalid_utf8 is _DE_REPLACE or (type(invalid_utf8) is str and invalid_utf8 == "replace"):
        errors = "replace"
    if invalid_utf8 is _DE_ERROR or errors != NULL or (
        type(invalid_utf8) is str and invalid_utf8 == "error"
    ):
        if capi.PyLong_CheckExact(<PyObject*>max_depth):
            depth = capi.PyLong_AsLongAndOverflow(<PyObject*>max_depth, &overflow)
            if overflow or depth < 1 or depth > _DE_MAX_DEPTH:
                depth = -1
    if depth < 0:
        return _seam.decode_payload(data, invalid_utf8=invalid_utf8, max_depth=max_depth)
    if capi.PyBytes_Check(<PyObject*>data):
        p = <_de_ptr>capi.PyBytes_AS_STRING(<PyObject*>data)
        n = capi.PyBytes_GET_SIZE(<PyObject*>data)
    elif capi.PyObject_GetBuffer(<PyObject*>data, &view, PyBUF_SIMPLE) == 0:
        # held until the end: a bytearray cannot be resized meanwhile
        have_view = True
        p = <_de_ptr>view.buf
        n = view.len
    else:
        capi.PyErr_Clear()
        return _seam.decode_payload(data, invalid_utf8=invalid_utf8, max_depth=max_depth)
    try:
        out = _de_decode(p, n, errors, depth, data)
    finally:
        if have_view:
            capi.PyBuffer_Release(&view)
    if out is None:
        _de_fallbacks += 1
        return _seam.decode_payload(data, invalid_utf8=invalid_utf8, max_depth=max_depth)
    return out


cdef object _de_decode(_de_ptr p, Py_ssize_t n, const char* errors, long depth, object data):
    """The event dict of the payload at p, or its error raised; None when no
    fault was recorded (memory, ...): the caller decodes it in Python."""
    cdef _DeState* d = _de_acquire()
    cdef PyObject* r
    cdef object out, warns, error
    d.errors = errors
    d.max_depth = depth
    d.base = p
    r = _de_event(d, p, n)
    if r == NULL:
        capi.PyErr_Clear()
        try:
            error = _de_error(d, p, n, data)
        finally:
            _de_release(d)
        if error is None:
            return None
        raise error
    warns = None
    if d.warns != NULL:
        warns = <object>d.warns
    _de_release(d)
    out = <object>r
    capi.Py_DECREF(r)
    if warns is not None:
        for text in warns:
            # C has no frame: level 1 is the caller of decode_payload (or of a
            # FrameDecoder.feed), as level 2 is for the pure twin
            _de_warnings.warn(text, _seam.UnknownPartWarning, stacklevel=1)
    return out


# -- refusals --------------------------------------------------------------------------

cdef object _de_error(_DeState* d, _de_ptr p, Py_ssize_t n, object data):
    """The error for the fault recorded in d (proto_reader.fault_error words it).
    A fault past max_depth is a LimitExceeded only if the payload decodes at
    MAX_DEPTH_LIMIT: else the other fault is raised (proto_reader's rule)."""
    cdef _DeFault f = d.fault
    cdef _DeState* again
    cdef PyObject* r
    cdef object other
    cdef int code = f.code
    cdef long declared
    if code == 0:
        return None
    buf = data if type(data) is bytes else (<char*>p)[:n]
    if code == _DF_DEPTH and d.max_depth < _DE_MAX_DEPTH:
        again = _de_acquire()
        again.errors = d.errors
        again.max_depth = _DE_MAX_DEPTH
        again.base = p
        r = _de_event(again, p, n)
        try:
            if r != NULL:
                capi.Py_DECREF(r)
            else:
                capi.PyErr_Clear()
                if again.fault.code != _DF_DEPTH:
                    return _de_error(again, p, n, data)     # another fault wins
        finally:
            _de_release(again)
    if code == _DF_WIRE:
        return _seam.fault_error(buf, d.max_depth, code, f.at - p, f.end - p)
    if code == _DF_GROUP:
        return _seam.fault_error(buf, d.max_depth, code, f.a, f.at - p, f.pos - p, f.end - p, f.b)
    if code == _DF_UTF8:
        return _seam.fault_error(buf, d.max_depth, code, f.at - p, f.end - p)
    if code == _DF_DEPTH or code == _DF_TOOL_RESULT:
        return _seam.fault_error(buf, d.max_depth, code, f.at - p)
    if code == _DF_EMPTY:
        return _seam.fault_error(buf, d.max_depth, code)
    if code == _DF_ONEOF:
        return _seam.fault_error(buf, d.max_depth, code, f.b, f.a, f.at - p)
    if code == _DF_NO_ARM:
        return _seam.fault_error(buf, d.max_depth, code, *_de_no_arm(p, n))
    if code == _DF_NO_BASE:
        return _seam.fault_error(buf, d.max_depth, code, f.a, f.at - p)
    if code == _DF_TYPE:
        declared = <long>(<int>(<uint32_t>f.b))
        return _seam.fault_error(buf, d.max_depth, code, f.a, declared, f.at - p)
    if code == _DF_CONTENT:
        return _seam.fault_error(
            buf, d.max_depth, code, <object>f.role,
            None if f.p1 == NULL else f.p1 - p,
            None if f.p2 == NULL else f.p2 - p,
            None if f.p3 == NULL else f.p3 - p,
        )
    return None


cdef tuple _de_no_arm(_de_ptr p, Py_ssize_t n):
    """A payload with no arm of this version (proto_reader.no_known_arm's
    arguments): the lowest arm number present with another wire type, else the
    well-formed message-shaped fields (an event of a later protocol)."""
    cdef _DeState scratch      # walks that fail are answers here, not faults
    cdef _DeOcc none[_DE_MAXNUM]
    cdef _DeSpec nothing
    cdef _DeRange r
    cdef _de_ptr q = p
    cdef _de_ptr end = p + n
    cdef _de_ptr at
    cdef _de_ptr s = NULL
    cdef _de_ptr e = NULL
    cdef uint64_t num, v, seen
    cdef uint64_t best = 0
    cdef int wt, best_wt = 0
    cdef Py_ssize_t best_at = 0, i
    cdef list unknown = []
    nothing.maxnum = 0
    for i in range(_DE_MAXNUM):
        nothing.wanted[i] = -1
    while q < end:
        at = q
        if _de_field(&q, end, &num, &wt, &v, &s, &e) < 0:
            break               # (scanned before: cannot happen)
        if wt == 3:
            continue            # a group: skipped, like any unknown field
        if num <= <uint64_t>_de_envelope.maxnum and _de_envelope.wanted[num] >= 0:
            # an arm number, not a message here (the scan found no arm)
            if best == 0 or num < best:
                best = num
                best_wt = wt
                best_at = at - p
        elif wt == 2 and best == 0:
            scratch.fault.code = 0
            if _de_scan(&scratch, _de_one(&r, s, e), &nothing, none, &seen) == 0:
                unknown.append((num, (<char*>s)[:e - s]))
    _de_g_clear()
    if best:
        return ((best, best_wt, best_at), [])
    return (None, unknown)


def _decoder_fallbacks():
    """How many payloads the C decoder handed to proto_reader to decode (a failure
    that records no fault: memory, odd input types) since import; for tests that
    check the C path covers valid input and refusals alike."""
    return _de_fallbacks
