# Cython twin of sse_writer.py, part 3 of 3: the entry points, in sse_writer's order
# (_encode, encode_sse, encode_sse_many, SSEEncoder), the scratch they write into and
# the tables the shapes add to the protobuf writer's (strategy: _sse_writer_json.pxi).
# An event the walk hands over goes to sse_writer._encode, with a fault in a
# top-level field located first by the protobuf writer's _en_find (so a refusal costs
# about what the protobuf encoder's costs).

# uses _proto_writer*.pxi: _EN_BAIL, _EN_MAXSLOT, _EN_MAX_DEPTH_LIMIT, _en_find, _en_options
# uses _proto_writer*.pxi: _json_value

cimport cython
from cpython.bytes cimport PyBytes_AS_STRING
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, memset

from agui_wire._codec import seam as _seam


# -- the tables the shapes add ------------------------------------------------------------

cdef void _sw_init() noexcept:
    cdef int i
    for i in range(_EN_MAXSLOT):
        _sw_no_fields.field_of[i] = -1
    _sw_no_fields.nfields = 0


_sw_init()
_sw_dict_entries = capi.agw_dict_next_check() == 1


# -- the scratch ---------------------------------------------------------------------------

cdef _SwOut _sw_main
cdef bint _sw_main_busy = False
cdef unsigned long long _sw_fallbacks = 0


cdef _SwOut* _sw_acquire(int flags, Py_ssize_t depth) except NULL:
    """The module scratch, or a private one if it is in use (re-entry), emptied."""
    global _sw_main_busy
    cdef _SwOut* w
    if not _sw_main_busy:
        _sw_main_busy = True
        w = &_sw_main
    else:
        w = <_SwOut*>malloc(sizeof(_SwOut))
        if w == NULL:
            raise MemoryError()
        memset(w, 0, sizeof(_SwOut))
    w.pos = 0
    w.nopen = 0
    w.nentries = 0
    w.check = False
    w.lossy = flags & 1
    w.extra_error = (flags & 2) != 0
    w.max_depth = depth
    return w


cdef void _sw_release(_SwOut* w) noexcept:
    global _sw_main_busy
    if w.direct != NULL:    # a walk that stopped in a big output
        _sw_drop_direct(w)
    if w == &_sw_main:
        _sw_main_busy = False
        if w.cap > _SW_KEEP:
            free(w.buf)
            w.buf = NULL
            w.cap = 0
        return
    free(w.buf)
    free(w.frames)
    free(w.entries)
    agw_ids_free(&w.deep)
    free(w)


cdef inline int _sw_message_into(_SwOut* w, object event) noexcept:
    """``data: <json>\\n\\n`` of ``event`` appended to w; BAIL to hand it over."""
    if _sw_raw(w, "data: ", 6) < 0 or _sw_event(w, <PyObject*>event) < 0:
        return _EN_BAIL
    return _sw_raw(w, "\n\n", 2)


# -- the hand-over ------------------------------------------------------------------------

cdef bytes _sw_refused(
    object event, object lossy_numbers, object extra_keys, object max_depth, int flags,
    Py_ssize_t depth
):
    """The JSON of an event the walk handed over: sse_writer words the refusal (the
    protobuf writer's _en_find has located a top-level one) or writes it."""
    global _sw_fallbacks
    _sw_fallbacks += 1
    cdef object found = _en_find(event, flags & 1, depth)
    return _seam.sse_handed_over(event, found, lossy_numbers, extra_keys, max_depth, _json_value)


cdef inline bint _sw_plain_id(PyObject* id) noexcept:
    """Whether ``id`` is an exact str the C path writes as it is: no CR, LF or NUL
    (sse_writer._check_id refuses those) and compact ASCII (else sse_writer)."""
    cdef Py_ssize_t n, i
    cdef const char* s
    if not capi.PyUnicode_CheckExact(id) or not capi.PyUnicode_IS_COMPACT_ASCII(id):
        return False
    s = agw_utf8(id, &n)
    for i in range(n):
        if s[i] == 10 or s[i] == 13 or s[i] == 0:
            return False
    return True


cdef bytes _sw_one(
    object event, object lossy_numbers, object extra_keys, object max_depth, int flags,
    Py_ssize_t depth, object id
):
    """One SSE message, ``id: <id>`` first unless ``id`` is None (a plain id)."""
    cdef _SwOut* w = _sw_acquire(flags, depth)
    cdef Py_ssize_t n = 0
    cdef const char* s
    try:
        if id is not None:
            s = agw_utf8(<PyObject*>id, &n)
            if _sw_raw(w, "id: ", 4) < 0 or _sw_raw(w, s, n) < 0 or _sw_byte(w, 10) < 0:
                raise MemoryError()
        if _sw_message_into(w, event) == 0:
            return _sw_take(w)
    finally:
        _sw_release(w)
    data = b"data: " + _sw_refused(event, lossy_numbers, extra_keys, max_depth, flags, depth)
    if id is not None:
        data = b"id: " + (<str>id).encode() + b"\n" + data
    return data + b"\n\n"


cdef bytes _sw_many(
    object events, object lossy_numbers, object extra_keys, object max_depth, int flags,
    Py_ssize_t depth, object convert
):
    """Several SSE messages, concatenated; all or nothing."""
    cdef _SwOut* w
    cdef unsigned char* out = NULL
    cdef Py_ssize_t size = 0, cap = 0, n
    cdef void* mem
    cdef bytes data
    cdef int r
    try:
        for event in events:
            # one event at a time (an iterator may run code between them), each on
            # its own: a bad event raises where sse_writer.encode_sse_many would
            if convert is not None and type(event) is not dict:
                event = convert(event)
            w = _sw_acquire(flags, depth)
            try:
                r = _sw_message_into(w, event)
                n = w.pos
                if r == 0:
                    if size + n > cap:
                        cap = max(2 * cap, size + n, 4096)
                        mem = realloc(out, <size_t>cap)
                        if mem == NULL:
                            raise MemoryError()
                        out = <unsigned char*>mem
                    memcpy(out + size, w.buf, <size_t>n)
                    size += n
            finally:
                _sw_release(w)
            if r != 0:
                data = b"data: " + _sw_refused(
                    event, lossy_numbers, extra_keys, max_depth, flags, depth
                ) + b"\n\n"
                n = len(data)
                if size + n > cap:
                    cap = max(2 * cap, size + n, 4096)
                    mem = realloc(out, <size_t>cap)
                    if mem == NULL:
                        raise MemoryError()
                    out = <unsigned char*>mem
                memcpy(out + size, PyBytes_AS_STRING(data), <size_t>n)
                size += n
        return capi.PyBytes_FromStringAndSize(<const char*>out, size) if size else b""
    finally:
        free(out)


# -- the entry points ----------------------------------------------------------------------

@cython.binding(False)     # a plain builtin: the cheapest call CPython has
def encode_sse(event, *, id=None, lossy_numbers=False, extra_keys="drop", max_depth=1024):
    """One SSE event: ``data: <json>\\n\\n`` (with ``id: <id>`` first if given).

    ``event`` is a dict shaped as ``@ag-ui/core`` JSON, or an official SDK pydantic
    event (``proto_writer.as_event_dict``). Raises the ``EncodeError`` that
    ``encode_proto`` raises for the same event and options (event type, JSON
    pointer, reason); keys the schema does not name are written as given
    (``extra_keys="error"`` refuses them, as on protobuf). ``id`` (for resumption
    with ``Last-Event-ID``) must not contain CR, LF or NUL.
    """
    cdef Py_ssize_t depth = 0
    cdef int flags = _en_options(
        <PyObject*>lossy_numbers, <PyObject*>extra_keys, <PyObject*>max_depth, &depth
    )
    if flags < 0 or (id is not None and not _sw_plain_id(<PyObject*>id)):
        return _seam.encode_sse(
            event, id=id, lossy_numbers=lossy_numbers, extra_keys=extra_keys, max_depth=max_depth
        )
    if type(event) is not dict:
        event = _seam.as_event_dict(event)
    return _sw_one(event, lossy_numbers, extra_keys, max_depth, flags, depth, id)


@cython.binding(False)
def encode_sse_many(events, *, lossy_numbers=False, extra_keys="drop", max_depth=1024):
    """Several events, concatenated SSE messages (no ids); all or nothing.
    """
    cdef Py_ssize_t depth = 0
    cdef int flags = _en_options(
        <PyObject*>lossy_numbers, <PyObject*>extra_keys, <PyObject*>max_depth, &depth
    )
    if flags < 0:
        return _seam.encode_sse_many(
            events, lossy_numbers=lossy_numbers, extra_keys=extra_keys, max_depth=max_depth
        )
    return _sw_many(events, lossy_numbers, extra_keys, max_depth, flags, depth, None)


cdef class SSEEncoder:
    """SSEEncoder(*, lossy_numbers=False, extra_keys="drop", max_depth=1024, convert=None)
--

    ``encode_sse`` (without ids) with its options bound, for a caller that encodes
    event after event (``EventEncoder``): ``.encode(event)`` is one C call. An
    event that is not a ``dict`` goes through ``convert`` first; ``convert=None``
    leaves it as is.
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
        """encode(event) -> bytes: one SSE message."""
        if type(event) is not dict and self.convert is not None:
            event = self.convert(event)
        if self.flags < 0:
            return _seam.SSEEncoder(
                lossy_numbers=self.lossy_numbers, extra_keys=self.extra_keys,
                max_depth=self.max_depth,
            ).encode(event)
        return _sw_one(
            event, self.lossy_numbers, self.extra_keys, self.max_depth, self.flags, self.depth,
            None,
        )

    def encode_many(self, events):
        """encode_many(events) -> bytes: several SSE messages, concatenated."""
        if self.flags < 0:
            return _seam.SSEEncoder(
                lossy_numbers=self.lossy_numbers, extra_keys=self.extra_keys,
                max_depth=self.max_depth, convert=self.convert,
            ).encode_many(events)
        return _sw_many(
            events, self.lossy_numbers, self.extra_keys, self.max_depth, self.flags, self.depth,
            self.convert,
        )


cdef bint _sw_holds(object event) except -1:
    """Whether the decoded ``event`` (a dict of a known type) holds to the contract
    as a decoder reads it (sse_reader.contract_holds): the writer's walk, writing
    nothing, with JSON null a value only where a shape allows it. False also for
    what only the pure twin can tell (it decides then)."""
    global _sw_main_busy
    cdef _SwOut* w
    cdef int r
    if _sw_main_busy:   # inside another walk's hand-over: a scratch of its own
        w = _sw_acquire(0, _EN_MAX_DEPTH_LIMIT)
        w.check = True
        r = _sw_check_event(w, <PyObject*>event)
        _sw_release(w)
        return r == 0
    # the module scratch, as _sw_acquire empties it; the walk runs no Python code
    w = &_sw_main
    w.pos = 0
    w.nopen = 0
    w.nentries = 0
    w.lossy = False
    w.extra_error = False
    w.max_depth = _EN_MAX_DEPTH_LIMIT
    w.check = True
    r = _sw_check_event(w, <PyObject*>event)
    w.check = False
    return r == 0


def _sse_dict_entries():
    """Whether the walks read a dict's entries without PyDict_Next (_dict_next.h)."""
    return _sw_dict_entries


def _sse_fallbacks():
    """Events handed to sse_writer since import (a fault, exotic input, a lossy
    integer past 64 bits, an id)."""
    return _sw_fallbacks
