# Cython twin of proto_writer.py, part 4 of 5: refusals. proto_writer words every
# refusal (_refuse, _Encoder._located); this finds where the first fault is, so its
# walk starts there (strategy: _proto_writer_wire.pxi).

from libc.math cimport isfinite
from libc.stdint cimport uint64_t
from libc.stdlib cimport free, realloc
from libc.string cimport memset

from agui_wire._codec import seam as _seam


# -- refusals: where proto_writer's walk meets the first fault of a JSON value ---------
#
# proto_writer words every refusal, but walking a big JSON value in Python costs
# ~100x what writing it here does. So an event this encoder hands over is walked
# there with each JSON value offered to _json_value first: the body written here
# when it can be, else where the walk's first fault in it is. The walk here goes
# forward in proto_writer's order (it writes backwards, so _en_json meets faults
# in the opposite order); whatever proto_writer reads differently (a subclass
# container, a Mapping, an integer-like or surrogate key that reorders or fails
# later, a lossy integer) is left to it (None).

cdef enum:
    _EN_AT_VALUE = 0    # = proto_writer._AT_VALUE
    _EN_AT_KEY = 1      # = proto_writer._AT_KEY
    _EN_AT_DEPTH = 2    # = proto_writer._AT_DEPTH
    _EN_AT_CYCLE = 3    # = proto_writer._AT_CYCLE
    _EN_LOC_OK = 0
    _EN_LOC_OPEN = 1
    _EN_LOC_BAD = 2
    _EN_LOC_UNSURE = 3
    _EN_NOT_OPEN = -1000000000  # _en_loc_owner: no open container (depth <= 10000)

ctypedef struct _EnLoc:
    PyObject* obj
    PyObject* key       # the key it is under, NULL for an array item
    Py_ssize_t index    # its index, for an array item
    Py_ssize_t pos      # the next entry (PyDict_Next position or index)


cdef int _en_loc_value(PyObject* v, bint lossy) noexcept:
    """What proto_writer's _scalar says of ``v``: OK, OPEN (an exact container),
    BAD (refused, or a type only proto_writer reads: it decides), UNSURE."""
    cdef Py_ssize_t n
    cdef int overflow = 0
    cdef long long i
    if v == capi.Py_None or v == capi.Py_True or v == capi.Py_False:
        return _EN_LOC_OK
    if capi.PyUnicode_Check(v):
        if agw_utf8(v, &n) == NULL:
            capi.PyErr_Clear()
            return _EN_LOC_BAD
        return _EN_LOC_OK
    if capi.PyDict_CheckExact(v) or capi.PyList_CheckExact(v) or capi.PyTuple_CheckExact(v):
        return _EN_LOC_OPEN
    if capi.PyFloat_Check(v):
        return _EN_LOC_OK if isfinite(capi.PyFloat_AS_DOUBLE(v)) else _EN_LOC_BAD
    if capi.PyLong_Check(v):
        i = capi.PyLong_AsLongLongAndOverflow(v, &overflow)
        if overflow == 0 and -AGW_MAX_EXACT <= i <= AGW_MAX_EXACT:
            return _EN_LOC_OK
        return _EN_LOC_UNSURE if lossy else _EN_LOC_BAD
    return _EN_LOC_BAD


cdef int _en_loc_keys(PyObject* obj, PyObject** bad) noexcept:
    """proto_writer._frame's key check of an exact dict: OK, BAD (``bad``: the
    first key that is not a str), UNSURE (a key proto_writer reads otherwise)."""
    cdef Py_ssize_t pos = 0, n
    cdef PyObject* k
    cdef PyObject* v
    cdef uint64_t number
    while capi.PyDict_Next(obj, &pos, &k, &v):
        if not capi.PyUnicode_CheckExact(k):
            if capi.PyUnicode_Check(k):
                return _EN_LOC_UNSURE
            bad[0] = k
            return _EN_LOC_BAD
        if agw_utf8(k, &n) == NULL:
            capi.PyErr_Clear()
            return _EN_LOC_UNSURE
        if _en_array_index(k, &number):
            return _EN_LOC_UNSURE
    return _EN_LOC_OK


cdef list _en_loc_keys_to(_EnLoc* st, Py_ssize_t n, PyObject* key, Py_ssize_t index, bint last):
    cdef Py_ssize_t j
    cdef list keys = []
    for j in range(1, n):
        keys.append(<object>st[j].key if st[j].key != NULL else st[j].index)
    if last:
        keys.append(<object>key if key != NULL else index)
    return keys


cdef Py_ssize_t _en_loc_owner(
    _EnLoc* st, Py_ssize_t n, list outer, agw_ids* open_ids, PyObject* child
) noexcept:
    """Where ``child`` is open on the way down, if it is (a cycle): its index in
    ``st`` (= keys from the root to it), or -1 - its index in ``outer``; else
    _EN_NOT_OPEN."""
    cdef Py_ssize_t j
    for j in range(capi.PyList_GET_SIZE(<PyObject*>outer)):
        if capi.PyList_GET_ITEM(<PyObject*>outer, j) == child:
            return -1 - j
    if agw_ids_has(open_ids, child):
        for j in range(n):
            if st[j].obj == child:
                return j
    return _EN_NOT_OPEN


cdef object _en_locate(object root, bint as_struct, Py_ssize_t max_depth, bint lossy, list outer):
    """Where proto_writer's walk of ``root`` meets its first fault: (at, value,
    keys), or None (no fault, or one only proto_writer can tell). ``outer``: the
    containers open around ``root``. No Python code runs, so the borrowed
    references stay valid."""
    cdef _EnLoc* st = NULL
    cdef _EnLoc* f
    cdef void* mem
    cdef Py_ssize_t n = 0, cap = 0, index = 0, owner
    cdef PyObject* key
    cdef PyObject* child
    cdef PyObject* bad = NULL
    cdef int r
    cdef agw_ids open_ids       # the containers in st, for cycles
    memset(&open_ids, 0, sizeof(agw_ids))
    if not as_struct:
        r = _en_loc_value(<PyObject*>root, lossy)
        if r == _EN_LOC_BAD:
            return (_EN_AT_VALUE, root, [])
        if r != _EN_LOC_OPEN:
            return None
    elif not capi.PyDict_CheckExact(<PyObject*>root):
        return None
    child = <PyObject*>root
    key = NULL
    try:
        while True:
            # open ``child`` (under ``key`` / ``index``)
            if n == cap:
                cap = cap * 2 if cap else 64
                mem = realloc(st, <size_t>cap * sizeof(_EnLoc))
                if mem == NULL:
                    return None
                st = <_EnLoc*>mem
            st[n].obj = child
            st[n].key = key
            st[n].index = index
            st[n].pos = 0
            n += 1
            if agw_ids_add(&open_ids, child) < 0:
                return None
            if capi.PyDict_CheckExact(child):
                r = _en_loc_keys(child, &bad)
                if r == _EN_LOC_BAD:
                    return (_EN_AT_KEY, <object>bad, _en_loc_keys_to(st, n, NULL, 0, False))
                if r != _EN_LOC_OK:
                    return None
            # the next value to look at, closing what is done
            while True:
                f = &st[n - 1]
                key = NULL
                if capi.PyDict_CheckExact(f.obj):
                    if not capi.PyDict_Next(f.obj, &f.pos, &key, &child):
                        child = NULL
                elif capi.PyList_CheckExact(f.obj):
                    child = capi.PyList_GET_ITEM(f.obj, f.pos) if f.pos < capi.PyList_GET_SIZE(f.obj) else NULL
                else:
                    child = capi.PyTuple_GET_ITEM(f.obj, f.pos) if f.pos < capi.PyTuple_GET_SIZE(f.obj) else NULL
                if child == NULL:
                    n -= 1
                    if n == 0:
                        return None
                    agw_ids_del(&open_ids, st[n].obj)
                    continue
                index = f.pos if key == NULL else 0
                if key == NULL:
                    f.pos += 1
                r = _en_loc_value(child, lossy)
                if r == _EN_LOC_OK:
                    continue
                # proto_writer refuses a container open on the way down first
                owner = _en_loc_owner(st, n, outer, &open_ids, child)
                if owner != _EN_NOT_OPEN:
                    return (_EN_AT_CYCLE, owner, _en_loc_keys_to(st, n, key, index, True))
                if r == _EN_LOC_BAD:
                    return (_EN_AT_VALUE, <object>child, _en_loc_keys_to(st, n, key, index, True))
                if r == _EN_LOC_UNSURE:
                    return None
                if n >= max_depth:
                    return (_EN_AT_DEPTH, None, _en_loc_keys_to(st, n, key, index, True))
                break
    finally:
        free(st)
        agw_ids_free(&open_ids)


def _json_value(root, bint as_struct, Py_ssize_t max_depth, bint lossy, list outer not None):
    """_json_value(root, as_struct, max_depth, lossy, outer) -> bytes | tuple | None

    For proto_writer's walk of an event this encoder handed over: the Value (or
    Struct) body of ``root``; or where the walk's first fault in it is, as
    (at, value, keys); or None when only the walk can tell. ``outer``: the
    containers open around ``root`` (a cycle may close on one of them; the walk
    here then meets ``root`` again, so it writes no bytes)."""
    cdef _EnState* e
    cdef int r
    if as_struct and not capi.PyDict_CheckExact(<PyObject*>root):
        return None     # _en_json reads a Struct root as an exact dict: proto_writer walks it
    e = _en_acquire()
    try:
        e.lossy = lossy
        e.extra_error = False
        e.max_depth = max_depth
        r = _en_json(e, <PyObject*>root, as_struct)
        if r == 0:
            return capi.PyBytes_FromStringAndSize(<const char*>e.pos, _en_written(e))
        capi.PyErr_Clear()
    finally:
        _en_release(e)
    return _en_locate(root, as_struct, max_depth, lossy, outer)


# -- refusals: the first fault of an event, when it is in a top-level field ------------
#
# An event the fast path refused used to be walked by proto_writer whole, to find
# the fault it reports: ~50x the cost of writing a small event. _en_find looks
# first, in proto_writer's order (the base event's fields, then the arm's, each
# ascending: _en_init checks the schema lists them so), at the event's 1:1 fields:
# each is judged fine only when the fast path writes it (which it does only for
# what proto_writer accepts), at fault when proto_writer's check of it surely
# fails, else "not known here" (a message, a repeated field, a subclass container
# or Mapping the fast path does not read). The first field at fault is handed to
# proto_writer._refuse, which words it with the walk's own methods; inside a JSON
# value the fault is located by _en_locate, as for _json_value. The special shapes
# (outcome, content) and extra_keys come after the 1:1 fields in proto_writer's
# walk: a fault there is the walk's to find.

cdef enum:
    _EN_FINE = 0
    _EN_FAULT = 1
    _EN_UNKNOWN = 2


cdef int _en_judge(_EnState* e, _EnField* f, PyObject* v) noexcept:
    """Whether proto_writer's field() accepts ``v`` (present, not None) for ``f``:
    FINE, FAULT or UNKNOWN (e is scratch)."""
    cdef int r
    e.pos = e.end
    e.nframes = 0
    e.npairs = 0
    if f.repeated or f.kind == _K_MESSAGE or f.kind == _K_PATCH_OP:
        r = _en_field(e, f, v)
        capi.PyErr_Clear()
        return _EN_FINE if r == 0 else _EN_UNKNOWN
    if f.kind == _K_STRING:
        r = _en_string(e, v, f.tag, True)
        capi.PyErr_Clear()     # a lone surrogate's UnicodeEncodeError
        return _EN_FINE if r == 0 else _EN_FAULT
    if f.kind == _K_INT64 or f.kind == _K_BOOL:
        return _EN_FINE if _en_field(e, f, v) == 0 else _EN_FAULT
    if f.kind == _K_STRUCT and not capi.PyDict_CheckExact(v):
        if (capi.PyUnicode_CheckExact(v) or capi.PyLong_CheckExact(v) or capi.PyFloat_CheckExact(v)
                or capi.PyList_CheckExact(v) or capi.PyTuple_CheckExact(v)
                or v == capi.Py_True or v == capi.Py_False):
            return _EN_FAULT    # not an object
        return _EN_UNKNOWN
    # a JSON value (Value, or the Struct of an exact dict)
    r = _en_json(e, v, f.kind == _K_STRUCT)
    capi.PyErr_Clear()
    return _EN_FINE if r == 0 else _EN_FAULT


cdef object _en_find(object event, bint lossy, Py_ssize_t max_depth):
    """Where proto_writer's walk of ``event`` (which the fast path refused) meets
    its first fault, if that is in a top-level 1:1 field: (event type, the field's
    name, whether it is a base event field, at, value, keys), the last three as
    _json_value gives them for a fault inside a JSON value there, else None (the
    field is refused as a whole: required, a scalar's type or text). None when it
    is not known here."""
    cdef PyObject* slots[_EN_MAXSLOT]
    cdef uint64_t present
    cdef Py_ssize_t unmatched
    cdef PyObject* t
    cdef PyObject* v
    cdef _EnSpec* arm
    cdef _EnSpec* sp
    cdef _EnField* f
    cdef _EnState* e
    cdef int i, k, r
    cdef object got
    if not capi.PyDict_CheckExact(<PyObject*>event):
        return None
    if _en_collect(<PyObject*>event, _en_event_index, slots, &present, &unmatched) < 0:
        return None
    if not (present >> _EV_TYPE) & 1:
        return None
    t = slots[_EV_TYPE]
    if not capi.PyUnicode_CheckExact(t):
        return None
    r = _en_lookup(_en_types, t)
    if r < 0:
        return None
    arm = &_en_events[r]
    e = _en_acquire()
    try:
        e.lossy = lossy
        e.extra_error = False
        e.max_depth = max_depth
        for k in range(2):
            sp = &_en_base if k == 0 else arm
            for i in range(sp.nfields):
                f = &sp.fields[i]
                if f.kind >= _K_CONTENT_STR:
                    continue    # a carrier of a special shape: after the 1:1 fields
                v = slots[f.slot] if (present >> f.slot) & 1 else NULL
                if v == NULL or v == capi.Py_None:
                    if v != NULL and f.nullable:
                        continue
                    if f.required:
                        return (<object>t, <object>f.key, k == 0, None, None, None)
                    continue
                if v == <PyObject*>event:   # the event inside itself
                    return (<object>t, <object>f.key, k == 0, None, None, None)
                e.open[0] = <PyObject*>event
                e.nopen = 1
                r = _en_judge(e, f, v)
                if r == _EN_FINE:
                    continue
                if r == _EN_UNKNOWN:
                    return None
                if f.kind != _K_VALUE and f.kind != _K_STRUCT:
                    return (<object>t, <object>f.key, k == 0, None, None, None)
                if f.kind == _K_STRUCT and not capi.PyDict_CheckExact(v):
                    return (<object>t, <object>f.key, k == 0, None, None, None)
                got = _en_locate(<object>v, f.kind == _K_STRUCT, max_depth, lossy, [event])
                if got is None:
                    return None
                return (<object>t, <object>f.key, k == 0, *got)
        return None
    finally:
        _en_release(e)


cdef object _en_refused(
    object event, object lossy_numbers, object extra_keys, object max_depth, int flags,
    Py_ssize_t depth
):
    """The payload of an event the fast path handed over: proto_writer raises the
    refusal _en_find located, or walks the event (with _json_value)."""
    return _seam.encode_handed_over(
        event, _en_find(event, flags & 1, depth), lossy_numbers, extra_keys, max_depth, _json_value
    )
