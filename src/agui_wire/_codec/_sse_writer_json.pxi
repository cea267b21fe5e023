# Cython twin of sse_writer.py, part 1 of 3: the output and JSON values.
#
# C strategy (the three parts): the event is written FORWARD into one reusable
# buffer ("data: ", its JSON, "\n\n"), in one walk that also holds it to the
# contract, reading the protobuf writer's tables (_proto_writer_tables.pxi: each
# message's keys, kinds, requiredness, nullability and rules, built once from
# agui_wire.schema), so the checks, the reference's null rule and the JSON are one
# pass with no Python objects made. Strings, integers and doubles are written in C
# with orjson's bytes (_json_out.h), so the output is what sse_writer writes.
# Nothing here runs Python code; the fast path takes exactly what it can read
# without it: exact dict/list/tuple, exact str/int/float, bool, None. Anything
# else returns BAIL (a fault, a subclass or other Mapping, a lossy integer past
# 64 bits, more depth than the limits, a cycle, an odd option) and the event goes
# to sse_writer._encode, which raises the contract's EncodeError (a fault in a
# top-level field is located here first, by the protobuf writer's _en_find) or
# writes it: so both twins give the same bytes and errors, each worded once.
#
# The parts, in sse_writer.py's order:
#   _sse_writer_json.pxi     the output buffer, scalars and JSON values (_scan,
#                            _normalize and _write of the pure twin)
#   _sse_writer_shapes.pxi   messages and the event by their shapes (the walkers
#                            and check_event's walk)
#   _sse_writer_entry.pxi    the entry points (_encode, encode_sse, encode_sse_many,
#                            SSEEncoder) and the tables the shapes add

# uses _proto_writer*.pxi: _EN_DEEP, _EN_MAXOPEN, _EN_BAIL

from libc.stdint cimport uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.math cimport isfinite

from agui_wire._codec import seam as _seam

cdef extern from "_codec/_json_out.h":
    Py_ssize_t agw_json_str_max(PyObject*)
    Py_ssize_t agw_json_str(unsigned char*, PyObject*) noexcept       # -1: a lone surrogate
    Py_ssize_t agw_json_i64(unsigned char*, long long) noexcept
    Py_ssize_t agw_json_double(unsigned char*, double) noexcept      # -1: no memory
    bint agw_small_int(PyObject*, long long*) noexcept                # 0: ask the C-API


cdef enum:
    _SW_INITIAL = 4096
    _SW_KEEP = 262144       # scratch kept between calls; a huge event's is freed
    _SW_DIRECT = 4096       # past this, the output is written into its bytes object
    _SW_OBJECT = 1          # a JSON container being written: an exact dict ...
    _SW_LIST = 2            # ... list ...
    _SW_TUPLE = 3           # ... or tuple (written as an array, as sse_writer normalizes it)

# containers with the event object that the SSE readers read (sse_writer.SSE_MAX_NESTING)
cdef Py_ssize_t _SW_MAX_NESTING = _seam.schema.JSON_MAX_NESTING

ctypedef struct _SwFrame:       # an open JSON container
    PyObject* obj
    Py_ssize_t pos              # PyDict_Next position, or the next index
    Py_ssize_t count            # entries written
    int kind

ctypedef struct _SwEntry:       # a member of an object of a known shape
    PyObject* key
    PyObject* value
    int slot                    # in its shape's index; -1: a key it does not know

ctypedef struct _SwOut:
    unsigned char* buf          # the output is buf[0:pos]
    Py_ssize_t pos
    Py_ssize_t cap
    # a big output is written in place into the bytes object it will be (no copy at
    # the end): `direct`, whose memory buf is then; the scratch waits aside
    PyObject* direct
    unsigned char* scratch
    Py_ssize_t scratch_cap
    _SwEntry* entries           # the members of the objects open, a stack
    Py_ssize_t nentries
    Py_ssize_t entries_cap
    bint lossy
    bint extra_error
    bint check                  # a decoder's check: nothing written, JSON null is a value
    Py_ssize_t max_depth
    _SwFrame* frames
    Py_ssize_t frames_cap
    agw_ids deep                # the containers _EN_DEEP or more below a JSON root
    PyObject* open[_EN_MAXOPEN] # the message-level containers open (the event first)
    int nopen


# -- the output --------------------------------------------------------------------------

# the size the last big output had: the next one starts there (a producer's state
# snapshots are alike), so it is rarely moved
cdef Py_ssize_t _sw_big_hint = 0


cdef int _sw_grow(_SwOut* w, Py_ssize_t n) noexcept:
    cdef Py_ssize_t want = w.cap * 2
    cdef void* mem
    cdef PyObject* obj
    if want < w.pos + n:
        want = w.pos + n
    if want < _SW_INITIAL:
        want = _SW_INITIAL
    if w.direct != NULL:
        if capi._PyBytes_Resize(&w.direct, want) < 0:    # frees it
            return _sw_drop_direct(w)
        w.buf = <unsigned char*>capi.PyBytes_AS_STRING(w.direct)
        w.cap = want
        return 0
    if want > _SW_DIRECT and not w.check:
        if want < _sw_big_hint + 64:
            want = _sw_big_hint + 64
        obj = capi.PyBytes_FromStringAndSize_raw(NULL, want)
        if obj == NULL:
            capi.PyErr_Clear()
            return _EN_BAIL
        agw_copy(<unsigned char*>capi.PyBytes_AS_STRING(obj), <const char*>w.buf, w.pos)
        w.scratch = w.buf
        w.scratch_cap = w.cap
        w.direct = obj
        w.buf = <unsigned char*>capi.PyBytes_AS_STRING(obj)
        w.cap = want
        return 0
    mem = realloc(w.buf, <size_t>want)
    if mem == NULL:
        return _EN_BAIL
    w.buf = <unsigned char*>mem
    w.cap = want
    return 0


cdef int _sw_drop_direct(_SwOut* w) noexcept:
    """Back to the scratch (a walk that bailed, or a bytes object that could not
    grow); BAIL."""
    capi.Py_XDECREF(w.direct)
    capi.PyErr_Clear()
    w.direct = NULL
    w.buf = w.scratch
    w.cap = w.scratch_cap
    w.pos = 0
    return _EN_BAIL


cdef object _sw_take(_SwOut* w):
    """The output as bytes: the object written in place, or a copy of the scratch."""
    global _sw_big_hint
    cdef PyObject* obj = w.direct
    if obj == NULL:
        return capi.PyBytes_FromStringAndSize(<const char*>w.buf, w.pos)
    w.direct = NULL
    w.buf = w.scratch
    w.cap = w.scratch_cap
    _sw_big_hint = w.pos
    if capi._PyBytes_Resize(&obj, w.pos) < 0:
        raise MemoryError()
    out = <object>obj       # a reference of its own ...
    capi.Py_DECREF(obj)     # ... so the one the bytes object was made with goes
    return out


cdef inline int _sw_reserve(_SwOut* w, Py_ssize_t n) noexcept:
    if w.pos + n > w.cap:
        return _sw_grow(w, n)
    return 0


cdef inline int _sw_byte(_SwOut* w, unsigned char c) noexcept:
    if w.check:
        return 0
    if w.pos + 1 > w.cap and _sw_grow(w, 1) < 0:
        return _EN_BAIL
    w.buf[w.pos] = c
    w.pos += 1
    return 0


cdef inline int _sw_str(_SwOut* w, PyObject* s) noexcept:
    """An exact str as a JSON string; BAIL for a lone surrogate."""
    cdef Py_ssize_t n
    if w.check:
        return 0
    if _sw_reserve(w, agw_json_str_max(s)) < 0:
        return _EN_BAIL
    n = agw_json_str(w.buf + w.pos, s)
    if n < 0:
        return _EN_BAIL
    w.pos += n
    return 0


cdef inline int _sw_key(_SwOut* w, PyObject* k, bint first) noexcept:
    """``,"key":`` (no comma first); BAIL unless an exact str with UTF-8."""
    cdef Py_ssize_t n
    cdef unsigned char* p
    if w.check:
        return 0
    if not capi.PyUnicode_CheckExact(k) or _sw_reserve(w, agw_json_str_max(k) + 2) < 0:
        return _EN_BAIL
    p = w.buf + w.pos
    if not first:
        p[0] = 44           # ,
        p += 1
    n = agw_json_str(p, k)
    if n < 0:
        return _EN_BAIL
    p[n] = 58               # :
    w.pos = (p + n + 1) - w.buf
    return 0


cdef inline int _sw_known_key(_SwOut* w, PyObject* k, bint first) noexcept:
    """``,"key":`` of a key a shape knows (an identifier: nothing to escape)."""
    cdef Py_ssize_t n
    cdef unsigned char* p
    if w.check:
        return 0
    if not capi.PyUnicode_IS_COMPACT_ASCII(k):
        return _sw_key(w, k, first)
    n = capi.PyUnicode_GET_LENGTH(k)
    if _sw_reserve(w, n + 4) < 0:
        return _EN_BAIL
    p = w.buf + w.pos
    if not first:
        p[0] = 44           # ,
        p += 1
    p[0] = 34               # "
    agw_copy(p + 1, <const char*>capi.PyUnicode_DATA(k), n)
    p[n + 1] = 34
    p[n + 2] = 58           # :
    w.pos = (p + n + 3) - w.buf
    return 0


cdef inline int _sw_raw(_SwOut* w, const char* s, Py_ssize_t n) noexcept:
    if w.check:
        return 0
    if _sw_reserve(w, n) < 0:
        return _EN_BAIL
    agw_copy(w.buf + w.pos, s, n)
    w.pos += n
    return 0


cdef inline int _sw_int(_SwOut* w, long long i) noexcept:
    if w.check:
        return 0
    if _sw_reserve(w, 24) < 0:
        return _EN_BAIL
    w.pos += agw_json_i64(w.buf + w.pos, i)
    return 0


cdef inline int _sw_double(_SwOut* w, double d) noexcept:
    cdef Py_ssize_t n
    if w.check:
        return 0
    if not isfinite(d) or _sw_reserve(w, 40) < 0:
        return _EN_BAIL
    n = agw_json_double(w.buf + w.pos, d)
    if n < 0:
        capi.PyErr_Clear()
        return _EN_BAIL
    w.pos += n
    return 0


# -- JSON values -------------------------------------------------------------------------

cdef inline int _sw_scalar(_SwOut* w, PyObject* v) noexcept:
    """A JSON scalar the contract takes in a JSON value: 1 written, 0 a container
    (exact dict, list or tuple), BAIL (a fault, or a type sse_writer normalizes)."""
    cdef long long i
    cdef int overflow = 0
    if capi.PyUnicode_CheckExact(v):
        return 1 if _sw_str(w, v) == 0 else _EN_BAIL
    if capi.PyDict_CheckExact(v) or capi.PyList_CheckExact(v) or capi.PyTuple_CheckExact(v):
        return 0
    if capi.PyLong_CheckExact(v):
        if agw_small_int(v, &i):
            return 1 if _sw_int(w, i) == 0 else _EN_BAIL
        i = capi.PyLong_AsLongLongAndOverflow(v, &overflow)
        if overflow or (not w.lossy and (i < -AGW_MAX_EXACT or i > AGW_MAX_EXACT)):
            return _EN_BAIL     # refused, or (lossy) written by sse_writer as its digits
        return 1 if _sw_int(w, i) == 0 else _EN_BAIL
    if capi.PyFloat_CheckExact(v):
        return 1 if _sw_double(w, capi.PyFloat_AS_DOUBLE(v)) == 0 else _EN_BAIL
    if v == capi.Py_None:
        return 1 if _sw_raw(w, "null", 4) == 0 else _EN_BAIL
    if v == capi.Py_True:
        return 1 if _sw_raw(w, "true", 4) == 0 else _EN_BAIL
    if v == capi.Py_False:
        return 1 if _sw_raw(w, "false", 5) == 0 else _EN_BAIL
    return _EN_BAIL


cdef inline bint _sw_is_open(_SwOut* w, PyObject* obj) noexcept:
    cdef int i
    for i in range(w.nopen):
        if w.open[i] == obj:
            return True
    return False


cdef int _sw_push(_SwOut* w, Py_ssize_t n, PyObject* obj) noexcept:
    """Open the JSON container ``obj`` as frame ``n``, writing its bracket."""
    cdef void* mem
    cdef Py_ssize_t cap
    if n == w.frames_cap:
        cap = w.frames_cap * 2 if w.frames_cap else 64
        mem = realloc(w.frames, <size_t>cap * sizeof(_SwFrame))
        if mem == NULL:
            return _EN_BAIL
        w.frames = <_SwFrame*>mem
        w.frames_cap = cap
    w.frames[n].obj = obj
    w.frames[n].pos = 0
    w.frames[n].count = 0
    if capi.PyDict_CheckExact(obj):
        w.frames[n].kind = _SW_OBJECT
        return _sw_byte(w, 123)     # {
    w.frames[n].kind = _SW_LIST if capi.PyList_CheckExact(obj) else _SW_TUPLE
    return _sw_byte(w, 91)          # [


cdef int _sw_json(_SwOut* w, PyObject* root, int level) noexcept:
    """Any JSON value (exact types), as orjson writes it: keys in insertion order,
    tuples as arrays. ``level``: the containers open around it, the event object
    included. BAIL beyond max_depth containers from ``root`` or SSE_MAX_NESTING
    with the event, for a container inside itself, and wherever _sw_scalar does."""
    cdef int r
    if w.check:
        return 0    # what a decoder read is JSON, any of it: zod's z.any()
    r = _sw_scalar(w, root)
    if r != 0:
        return 0 if r == 1 else _EN_BAIL
    if _sw_is_open(w, root) or level >= _SW_MAX_NESTING:
        return _EN_BAIL
    return _sw_container(w, root, level, 1)


cdef int _sw_container(_SwOut* w, PyObject* obj, int level, Py_ssize_t c) noexcept:
    """The exact dict, list or tuple ``obj``, the ``c``-th container open from its
    value's root (``level`` containers around that root), its limits checked by the
    caller. The first _EN_DEEP levels by recursion (the common, shallow value: its
    loop in registers); below them the walk of _sw_json_deep, which keeps what it
    has open, so a cycle is met in bounded laps."""
    cdef Py_ssize_t pos = 0, i, size
    cdef PyObject* k
    cdef PyObject* child
    cdef bint first = True
    cdef int r, kind
    if c > _EN_DEEP:
        return _sw_json_deep(w, obj, level, c - 1)
    if capi.PyDict_CheckExact(obj):
        if _sw_byte(w, 123) < 0:                            # {
            return _EN_BAIL
        while capi.agw_dict_next(obj, &pos, &k, &child):
            if _sw_key(w, k, first) < 0:
                return _EN_BAIL
            first = False
            r = _sw_scalar(w, child)
            if r == 0:
                if c >= w.max_depth or level + c >= _SW_MAX_NESTING or _sw_is_open(w, child) \
                        or _sw_container(w, child, level, c + 1) < 0:
                    return _EN_BAIL
            elif r < 0:
                return _EN_BAIL
        return _sw_byte(w, 125)                             # }
    kind = _SW_LIST if capi.PyList_CheckExact(obj) else _SW_TUPLE
    if _sw_byte(w, 91) < 0:                                 # [
        return _EN_BAIL
    i = 0
    while True:
        # re-read: the list is the caller's, and no code runs, but keep it honest
        size = capi.PyList_GET_SIZE(obj) if kind == _SW_LIST else capi.PyTuple_GET_SIZE(obj)
        if i >= size:
            break
        child = capi.PyList_GET_ITEM(obj, i) if kind == _SW_LIST else capi.PyTuple_GET_ITEM(obj, i)
        if i and _sw_byte(w, 44) < 0:                       # ,
            return _EN_BAIL
        i += 1
        r = _sw_scalar(w, child)
        if r == 0:
            if c >= w.max_depth or level + c >= _SW_MAX_NESTING or _sw_is_open(w, child) \
                    or _sw_container(w, child, level, c + 1) < 0:
                return _EN_BAIL
        elif r < 0:
            return _EN_BAIL
    return _sw_byte(w, 93)                                  # ]


cdef int _sw_json_deep(_SwOut* w, PyObject* root, int level, Py_ssize_t base) noexcept:
    """_sw_container's walk below its recursion: ``root`` (an exact container) with
    ``base`` containers open above it in its value, written with a stack of frames;
    the containers open _EN_DEEP or more below ``root`` are kept in an identity set
    (a cycle is met as one seen again)."""
    cdef int r
    cdef Py_ssize_t n = 0, size
    cdef _SwFrame* f
    cdef PyObject* k
    cdef PyObject* child
    agw_ids_clear(&w.deep)      # left over by a walk that bailed
    if _sw_push(w, 0, root) < 0:
        return _EN_BAIL
    n = 1
    while n:
        f = &w.frames[n - 1]
        if f.kind == _SW_OBJECT:
            if not capi.agw_dict_next(f.obj, &f.pos, &k, &child):
                child = NULL
            elif _sw_key(w, k, f.count == 0) < 0:
                return _EN_BAIL
            f.count += 1
        else:
            size = capi.PyList_GET_SIZE(f.obj) if f.kind == _SW_LIST else capi.PyTuple_GET_SIZE(f.obj)
            if f.pos >= size:
                child = NULL
            else:
                child = (capi.PyList_GET_ITEM(f.obj, f.pos) if f.kind == _SW_LIST
                         else capi.PyTuple_GET_ITEM(f.obj, f.pos))
                if f.pos and _sw_byte(w, 44) < 0:
                    return _EN_BAIL
                f.pos += 1
        if child == NULL:       # the container is complete
            n -= 1
            if n >= _EN_DEEP:
                agw_ids_del(&w.deep, f.obj)
            if _sw_byte(w, 125 if f.kind == _SW_OBJECT else 93) < 0:     # } ]
                return _EN_BAIL
            continue
        r = _sw_scalar(w, child)
        if r == 1:
            continue
        if r < 0:
            return _EN_BAIL
        # a container: within the limits, and not one open on the way down (a cycle)
        if base + n >= w.max_depth or level + base + n >= _SW_MAX_NESTING \
                or _sw_is_open(w, child):
            return _EN_BAIL
        if n >= _EN_DEEP and agw_ids_add(&w.deep, child) != 0:
            return _EN_BAIL
        if _sw_push(w, n, child) < 0:
            return _EN_BAIL
        n += 1
    return 0
