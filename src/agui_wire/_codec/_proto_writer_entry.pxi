# Cython twin of proto_writer.py, part 3 of 5: the entry points, in proto_writer's order
# (encode_payload, encode_proto, encode_frames, FrameEncoder), and the scratch state they
# write into (strategy: _proto_writer_wire.pxi). A refused event goes to proto_writer,
# with the fault located first (_proto_writer_refusals.pxi).

cimport cython
from libc.stdint cimport uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, memset

from agui_wire._codec import seam as _seam


# -- the scratch state -----------------------------------------------------------------

cdef _EnState _en_main
cdef bint _en_main_busy = False
cdef unsigned long long _en_fallbacks = 0


cdef inline _EnState* _en_acquire() except NULL:
    # The module scratch, or a private one if it is in use (re-entry).
    global _en_main_busy
    cdef _EnState* e
    if not _en_main_busy and _en_main.buf != NULL:
        _en_main_busy = True
        e = &_en_main
        e.pos = e.end
        e.nframes = 0
        e.npairs = 0
        e.nopen = 0
        return e
    return _en_acquire_slow()


cdef _EnState* _en_acquire_slow() except NULL:
    global _en_main_busy
    cdef _EnState* e
    if not _en_main_busy:
        _en_main_busy = True
        e = &_en_main
    else:
        e = <_EnState*>malloc(sizeof(_EnState))
        if e == NULL:
            raise MemoryError()
        e.buf = e.end = e.pos = NULL
        e.frames = NULL
        e.frames_cap = 0
        e.pairs = NULL
        e.pairs_cap = 0
        memset(&e.deep, 0, sizeof(agw_ids))
    if e.buf == NULL:
        e.buf = <unsigned char*>malloc(_EN_INITIAL)
        if e.buf == NULL:
            _en_release(e)
            raise MemoryError()
        e.end = e.buf + _EN_INITIAL
    e.pos = e.end
    e.nframes = 0
    e.npairs = 0
    e.nopen = 0
    return e


cdef inline void _en_release(_EnState* e) noexcept:
    global _en_main_busy
    if e == &_en_main:
        _en_main_busy = False
        if e.end - e.buf > _EN_KEEP:
            free(e.buf)
            e.buf = e.end = e.pos = NULL
        return
    free(e.buf)
    free(e.frames)
    free(e.pairs)
    agw_ids_free(&e.deep)
    free(e)


# -- options and entry points ----------------------------------------------------------

cdef long _EN_MAX_DEPTH_LIMIT = _seam.schema.MAX_DEPTH_LIMIT
cdef object _EN_DROP = "drop"       # the same interned objects as the defaults
cdef object _EN_ERROR = "error"


cdef inline void _en_be32(unsigned char* p, uint64_t n) noexcept:
    p[0] = <unsigned char>(n >> 24)
    p[1] = <unsigned char>(n >> 16)
    p[2] = <unsigned char>(n >> 8)
    p[3] = <unsigned char>n


cdef inline int _en_options(
    PyObject* lossy_numbers, PyObject* extra_keys, PyObject* max_depth, Py_ssize_t* depth
) noexcept:
    """Options the fast path takes as they are: flags (1 lossy, 2 extra error),
    or -1 to leave the call to proto_writer (odd types, or invalid: it raises)."""
    cdef int flags = 0, overflow = 0
    cdef long d
    if lossy_numbers == capi.Py_True:
        flags = 1
    elif lossy_numbers != capi.Py_False:
        return -1
    if extra_keys == <PyObject*>_EN_ERROR:
        flags |= 2
    elif extra_keys != <PyObject*>_EN_DROP:
        if not capi.PyUnicode_CheckExact(extra_keys):
            return -1
        if agw_str_eq(extra_keys, <PyObject*>_EN_ERROR):
            flags |= 2
        elif not agw_str_eq(extra_keys, <PyObject*>_EN_DROP):
            return -1
    if not capi.PyLong_CheckExact(max_depth):
        return -1
    d = capi.PyLong_AsLongAndOverflow(max_depth, &overflow)
    if overflow or d < 1 or d > _EN_MAX_DEPTH_LIMIT:
        return -1
    depth[0] = d
    return flags


@cython.binding(False)     # a plain builtin: the cheapest call CPython has
def encode_payload(event, *, lossy_numbers=False, extra_keys="drop", max_depth=1024):
    """The serialized ``ag_ui.Event`` for one event dict (no length prefix).
    """
    cdef Py_ssize_t depth = 0
    cdef int flags = _en_options(
        <PyObject*>lossy_numbers, <PyObject*>extra_keys, <PyObject*>max_depth, &depth
    )
    cdef object out
    if flags >= 0:
        out = _en_one(event, flags, depth, False)
        if out is not None:
            return out
        return _en_refused(event, lossy_numbers, extra_keys, max_depth, flags, depth)
    return _seam.encode_payload(
        event, lossy_numbers=lossy_numbers, extra_keys=extra_keys, max_depth=max_depth
    )


cdef object _en_one(object event, int flags, Py_ssize_t max_depth, bint framed):
    global _en_fallbacks
    cdef _EnState* e = _en_acquire()
    cdef Py_ssize_t n
    cdef int r
    try:
        e.lossy = flags & 1
        e.extra_error = (flags & 2) != 0
        e.max_depth = max_depth
        r = _en_run(e, event)
        if r == 0:
            n = _en_written(e)
            if not framed:
                return capi.PyBytes_FromStringAndSize(<const char*>e.pos, n)
            if <uint64_t>n > AGW_U32_MAX:
                raise _seam.EncodeError(
                    f"event encodes to {n} bytes, more than a frame can carry"
                )
            if _en_reserve(e, 4) < 0:
                raise MemoryError()
            e.pos -= 4
            _en_be32(e.pos, <uint64_t>n)
            return capi.PyBytes_FromStringAndSize(<const char*>e.pos, n + 4)
    finally:
        _en_release(e)
    _en_fallbacks += 1
    return None


cdef inline int _en_run(_EnState* e, object event) noexcept:
    """Encode `event` into e: 0 done, BAIL for proto_writer."""
    cdef int r = _en_event(e, <PyObject*>event, NULL, 0)
    if r == _EN_RETYPE:
        r = _en_retype(e, event)
    if r < 0:
        capi.PyErr_Clear()     # a failed UTF-8 conversion leaves its exception set
        return _EN_BAIL
    return 0


cdef int _en_retype(_EnState* e, object event) noexcept:
    # A str subclass as `type` (an enum): its hash/eq may be Python code, so it
    # is looked up here, and the event is read again afterwards.
    cdef object t, forced
    try:
        t = event.get("type")
        forced = _en_types_dict.get(t)
    except BaseException:
        forced = None
    if forced is None:
        return _EN_BAIL
    e.pos = e.end
    e.nframes = 0
    e.npairs = 0
    return _en_event(e, <PyObject*>event, <PyObject*>t, forced)


@cython.binding(False)     # a plain builtin: the cheapest call CPython has
def encode_proto(event, *, lossy_numbers=False, extra_keys="drop", max_depth=1024):
    """One binary frame for ``event``: 4-byte big-endian length + ``ag_ui.Event``.

    ``event`` is a dict shaped as ``@ag-ui/core`` JSON, or an official SDK pydantic
    event (``as_event_dict``). Byte-identical to ``@ag-ui/proto`` 1.0.0 for valid
    events. Raises ``EncodeError`` (event type, JSON pointer, reason) for anything
    the wire cannot carry faithfully; see docs/wire-format.md for the rules.
    """
    cdef Py_ssize_t depth = 0
    if type(event) is not dict:
        event = _seam.as_event_dict(event)
    cdef int flags = _en_options(
        <PyObject*>lossy_numbers, <PyObject*>extra_keys, <PyObject*>max_depth, &depth
    )
    cdef object out
    if flags >= 0:
        out = _en_one(event, flags, depth, True)
        if out is not None:
            return out
        out = _en_refused(event, lossy_numbers, extra_keys, max_depth, flags, depth)
        return _seam.frame_prefix(out) + out
    return _seam.encode_proto(
        event, lossy_numbers=lossy_numbers, extra_keys=extra_keys, max_depth=max_depth
    )


cdef int _en_append(
    unsigned char** out, Py_ssize_t* size, Py_ssize_t* cap, const unsigned char* src, Py_ssize_t n
) except -1:
    # One frame onto the batch buffer.
    cdef Py_ssize_t want = size[0] + 4 + n
    cdef void* mem
    if want > cap[0]:
        if want < 2 * cap[0]:
            want = 2 * cap[0]
        if want < 4096:
            want = 4096
        mem = realloc(out[0], <size_t>want)
        if mem == NULL:
            raise MemoryError()
        out[0] = <unsigned char*>mem
        cap[0] = want
    _en_be32(out[0] + size[0], <uint64_t>n)
    memcpy(out[0] + size[0] + 4, src, <size_t>n)
    size[0] += 4 + n
    return 0


@cython.binding(False)
def encode_frames(events, *, lossy_numbers=False, extra_keys="drop", max_depth=1024):
    """Frames for several events, concatenated: a binary stream body.
    """
    global _en_fallbacks
    cdef Py_ssize_t depth = 0
    cdef int flags = _en_options(
        <PyObject*>lossy_numbers, <PyObject*>extra_keys, <PyObject*>max_depth, &depth
    )
    cdef _EnState* e
    cdef unsigned char* out = NULL
    cdef Py_ssize_t size = 0, cap = 0, n
    cdef int r
    cdef bytes payload
    if flags < 0:
        return _seam.encode_frames(
            events, lossy_numbers=lossy_numbers, extra_keys=extra_keys, max_depth=max_depth
        )
    try:
        for event in events:
            # One event at a time (an iterator may run code between them), each
            # encoded on its own: a bad event raises exactly where
            # proto_writer.encode_frames would, after the same good ones.
            r = _EN_BAIL
            e = _en_acquire()
            try:
                e.lossy = flags & 1
                e.extra_error = (flags & 2) != 0
                e.max_depth = depth
                r = _en_run(e, event)
                if r == 0:
                    n = _en_written(e)
                    if <uint64_t>n > AGW_U32_MAX:
                        raise _seam.EncodeError(
                            f"event encodes to {n} bytes, more than a frame can carry"
                        )
                    _en_append(&out, &size, &cap, e.pos, n)
            finally:
                _en_release(e)
            if r != 0:
                _en_fallbacks += 1
                payload = _en_refused(event, lossy_numbers, extra_keys, max_depth, flags, depth)
                _seam.frame_prefix(payload)
                _en_append(
                    &out, &size, &cap, <const unsigned char*><const char*>payload, len(payload)
                )
        if out == NULL:
            return b""
        return capi.PyBytes_FromStringAndSize(<const char*>out, size)
    finally:
        free(out)


cdef class FrameEncoder:
    """FrameEncoder(*, lossy_numbers=False, extra_keys="drop", max_depth=1024, convert=None)
--

    ``encode_proto`` with its options bound, for a caller that encodes event
    after event (``EventEncoder``): ``.encode(event)`` is one C call with no
    keyword parsing. An event that is not a ``dict`` goes through ``convert``
    first (the official SDK's pydantic events); ``convert=None`` leaves it as is.
    """

    cdef int flags
    cdef Py_ssize_t depth
    cdef object convert
    cdef object lossy_numbers, extra_keys, max_depth

    def __init__(self, *, lossy_numbers=False, extra_keys="drop", max_depth=1024, convert=None):
        _seam.check_encode_options(extra_keys, max_depth, lossy_numbers)
        self.flags = _en_options(
            <PyObject*>lossy_numbers, <PyObject*>extra_keys, <PyObject*>max_depth, &self.depth
        )
        self.lossy_numbers = lossy_numbers
        self.extra_keys = extra_keys
        self.max_depth = max_depth
        self.convert = convert

    def encode(self, event):
        """One frame."""
        cdef object out
        if type(event) is not dict and self.convert is not None:
            event = self.convert(event)
        if self.flags >= 0:
            out = _en_one(event, self.flags, self.depth, True)
            if out is not None:
                return out
            out = _en_refused(
                event, self.lossy_numbers, self.extra_keys, self.max_depth, self.flags, self.depth
            )
            return _seam.frame_prefix(out) + out
        return _seam.encode_proto(
            event,
            lossy_numbers=self.lossy_numbers,
            extra_keys=self.extra_keys,
            max_depth=self.max_depth,
        )

    def encode_many(self, events):
        """The frames of several events, concatenated."""
        if self.convert is not None:
            convert = self.convert
            events = [e if type(e) is dict else convert(e) for e in events]
        return encode_frames(
            events,
            lossy_numbers=self.lossy_numbers,
            extra_keys=self.extra_keys,
            max_depth=self.max_depth,
        )


def _encoder_fallbacks():
    """How many events the C encoder handed to proto_writer (errors, exotic
    input) since import; for tests that check the fast path covers valid events."""
    return _en_fallbacks
