# Cython twin of proto_writer.py: event dict -> ag_ui.Event wire bytes. The
# contract (bytes, JS property order, null rule, number rules, options) is the
# module doc of proto_writer.py; tests/differential/test_proto_codec.py holds the two to the
# same bytes and the same errors.
#
# C strategy:
# * The payload is written BACKWARDS into a reusable scratch buffer (as upb
#   does): fields in descending field number, and after a sub-message's body
#   its length is known, so the length and tag are prepended. One pass, no
#   size pre-pass, no intermediate objects; the buffer grows by moving the
#   written tail to the end of a bigger one. Positions are kept as "bytes
#   written so far", which growing does not change.
# * Dispatch: every JSON object that is a message is read with ONE PyDict_Next
#   walk; each key is looked up in a per-spec key table (key -> slot, built
#   from agui_wire.schema at import; probed inline: interned identity first,
#   then cached hash and bytes) and its value parked in a slot array. That
#   finds present fields, unknown keys (extra_keys) and the event `type` in one
#   go, and no Python code runs: only exact str keys are looked up. A `type`
#   that is a str subclass (an enum) is looked up in Python, then the event is
#   read again. Struct entries are collected into a pair stack and walked in
#   reverse (integer-like keys sorted first, as JavaScript does).
# * The fast path accepts exactly what it can read without running Python code:
#   exact dict/list/tuple, str and int/float (subclasses read by value, as
#   proto_writer's isinstance checks do), bool, None. Borrowed references stay
#   valid because nothing can mutate the event meanwhile.
# * Anything else returns BAIL: an invalid event, a dict/list subclass, a key
#   that is not an exact str, an odd option value. BAIL re-runs the event
#   through proto_writer, which raises the reference's error (same class,
#   event_type, path, reason) or, for the rare exotic-but-valid input, encodes
#   it. Error detection here only has to be exact about WHETHER an event is
#   invalid; which error is reported is proto_writer's business.
# * JSON nesting uses an explicit frame stack (max_depth up to 10000 costs no
#   C stack); message nesting is bounded by the schema.
#
# The parts, in proto_writer.py's order (each file stands alone: tests/contract/test_c_twins.py):
#   _proto_writer_wire.pxi      the C types, the backward writer (_varint, _tag, _ld and the
#                               scalars), JSON values (js_key_order, cycles, _scalar, _json)
#   _proto_writer_messages.pxi  messages (fields, field, message, check_extra, chat_message,
#                               content_parts, source) and the event (event, outcome)
#   _proto_writer_entry.pxi     the scratch state and the entry points (encode_payload,
#                               encode_proto, encode_frames, FrameEncoder)
#   _proto_writer_refusals.pxi  where a refused event's first fault is (_refuse, _located)
#   _proto_writer_tables.pxi    the C tables, built from agui_wire.schema at import

from libc.math cimport isfinite
from libc.stdint cimport uint32_t, uint64_t
from libc.stdlib cimport free, malloc, qsort, realloc
from libc.string cimport memcpy

cdef enum:
    # _en_json keeps the open containers this deep or deeper below a JSON root in an
    # identity set: a cycle goes round at most _EN_DEEP / its length + 2 laps before
    # it is met (a constant factor; proto_writer then locates it, by identity from the
    # root), and the common shallow value pays nothing for it
    _EN_DEEP = 8

# str -> small int tables, probed inline: the identity of an interned key first
# (dict literals and our own constants), then the cached hash and the bytes.
# Faster than PyDict_GetItemWithError + PyLong_AsLong, and never runs Python
# code: only exact str keys are looked up.
cdef enum:
    _EN_TABLE = 128          # table size: up to 64 keys at load <= 1/2

ctypedef struct _EnTable:
    Py_ssize_t mask
    PyObject* keys[_EN_TABLE]
    Py_ssize_t hashes[_EN_TABLE]
    int values[_EN_TABLE]


cdef inline int _en_lookup(_EnTable* t, PyObject* k) noexcept:
    """The value of the exact str `k`, or -1."""
    cdef Py_ssize_t h, i
    cdef PyObject* kk
    h = agw_str_hash(k)
    if h == -1:
        if not agw_str_ready(k):
            return -1       # a legacy string: no table key is one
        h = capi.PyObject_Hash(k)     # exact str: computed in C, cached on the object
    i = h & t.mask
    while True:
        kk = t.keys[i]
        if kk == k:
            return t.values[i]
        if kk == NULL:
            return -1
        if t.hashes[i] == h and agw_str_ready(k) and agw_str_eq(kk, k):
            return t.values[i]
        i = (i + 1) & t.mask


cdef enum:
    _EN_MAXF = 32           # fields per message, carriers included (Message has 13)
    _EN_MAXSPEC = 64        # message specs (schema.MESSAGES has 51)
    _EN_MAXEVENTS = 64      # event types (AG-UI 1.0 has 31)
    _EN_MAXPARTS = 16       # content part types, roles, outcome types, patch ops
    _EN_MAXSLOT = 64        # keys per index: slot masks are uint64
    _EN_BAIL = -1
    _EN_RETYPE = -2         # the event `type` is a str subclass: look it up in Python
    _EN_KEEP = 262144       # scratch kept between calls; a huge event's is freed
    _EN_INITIAL = 4096
    _EN_MAXOPEN = 32        # message-level containers open at once (the schema nests ~8)

# field kinds beyond schema.Kind's (_K_STRING ... _K_PATCH_OP, in _common.pxi)
cdef enum:
    # the carriers of the special shapes (schema module doc), in the field table at
    # their wire numbers: written when _EnSpecial says so
    _K_CONTENT_STR = 16     # `content` when it is a string
    _K_CONTENT_PARTS = 17   # `content` when it is an array of content parts
    _K_CONTENT_MAP = 18     # `content` when it is an object (activity content)
    _K_OUTCOME_TYPE = 19    # `outcome.type`
    _K_OUTCOME_PAYLOAD = 20 # the outcome's payload list, when this field carries it

# how a message spec is written beyond its 1:1 fields
cdef enum:
    _SP_PLAIN = 0
    _SP_CHAT = 1            # Message: `content` by role
    _SP_PATCH = 2           # JsonPatchOperation: requiredness by op
    _SP_SOURCE = 3          # InputContentSource: a JSON union on `type`
    _EV_RUN_FINISHED = 11
    _EV_SUBAGENT_FINISHED = 12
    _EV_TOOL_CALL_RESULT = 13

ctypedef struct _EnField:
    PyObject* key           # JSON key (interned; owned by _en_keep)
    int number
    int kind
    int slot                # where _en_collect parks this key's value
    int sub                 # spec index for _K_MESSAGE
    uint32_t tag            # (number << 3) | wire type
    bint repeated
    bint presence
    bint required
    bint nullable

ctypedef struct _EnSpec:
    int nfields
    _EnField fields[_EN_MAXF]   # ascending field number
    int special
    _EnTable* index             # key -> slot
    uint64_t known              # slots of the keys this spec has a wire field for
    uint32_t arm_tag            # unions (sources, parts, events): tag of the arm
    uint64_t type_value         # events: BaseEvent.type

ctypedef struct _EnFrame:       # an open JSON container
    PyObject* obj
    PyObject* key               # its key in the parent object; NULL in an array
    Py_ssize_t left             # entries still to write, walked from the end
    Py_ssize_t pbase            # objects: first pair in the pair stack
    Py_ssize_t mark             # bytes written when its body began
    int kind                    # 5 object, 6 list, 7 tuple

ctypedef struct _EnIndexKey:    # an integer-like key, for the JavaScript order
    uint64_t number
    PyObject* key
    PyObject* value

ctypedef struct _EnRole:
    uint64_t required           # Message slots this role requires (content aside)
    bint content_required
    int allowed                 # content JSON types: 1 str, 2 array, 4 object

ctypedef struct _EnOutcome:
    int slot                    # outcome-index slot of the payload key; -1: none
    bint required
    _EnField field              # how the payload list is written

ctypedef struct _EnSpecial:     # what the carrier fields of one message write
    PyObject* content           # the `content` value ...
    int carrier                 # ... and the _K_CONTENT_* field that writes it (0: none)
    PyObject* otype             # outcome.type, or NULL
    PyObject* payload           # the outcome's payload list, or NULL ...
    _EnField* payload_field     # ... and how it is written (its number names its carrier)

ctypedef struct _EnState:
    unsigned char* buf          # allocation; the output is [pos, end)
    unsigned char* end
    unsigned char* pos
    bint lossy
    bint extra_error
    Py_ssize_t max_depth
    _EnFrame* frames
    Py_ssize_t nframes
    Py_ssize_t frames_cap
    PyObject** pairs
    Py_ssize_t npairs
    Py_ssize_t pairs_cap
    agw_ids deep                # the open containers _EN_DEEP or more below a JSON root
    PyObject* open[_EN_MAXOPEN] # the message-level containers open (the event first)
    int nopen


# -- the backward writer (proto_writer's _varint, _tag, _ld; the scalars) --------------

cdef inline Py_ssize_t _en_written(_EnState* e) noexcept:
    return e.end - e.pos


cdef int _en_grow(_EnState* e, Py_ssize_t need) noexcept:
    # Move the written tail to the end of a buffer at least twice as big.
    cdef Py_ssize_t used = e.end - e.pos
    cdef Py_ssize_t cap = e.end - e.buf
    cdef Py_ssize_t want = cap * 2
    cdef unsigned char* mem
    if want < used + need + 64:
        want = used + need + 64
    if want < _EN_INITIAL:
        want = _EN_INITIAL
    mem = <unsigned char*>malloc(<size_t>want)
    if mem == NULL:
        return _EN_BAIL
    if used:
        memcpy(mem + want - used, e.pos, <size_t>used)
    free(e.buf)
    e.buf = mem
    e.end = mem + want
    e.pos = e.end - used
    return 0


cdef inline int _en_reserve(_EnState* e, Py_ssize_t n) noexcept:
    if e.pos - e.buf < n:
        return _en_grow(e, n)
    return 0


cdef inline void _en_varint(_EnState* e, uint64_t v) noexcept:
    # The caller reserved 10 bytes.
    cdef int n = 1
    cdef uint64_t x = v >> 7
    cdef unsigned char* p
    if v < 0x80:
        e.pos -= 1
        e.pos[0] = <unsigned char>v
        return
    while x:
        n += 1
        x >>= 7
    e.pos -= n
    p = e.pos
    while v >= 0x80:
        p[0] = <unsigned char>((v & 0x7F) | 0x80)
        v >>= 7
        p += 1
    p[0] = <unsigned char>v


cdef inline int _en_close(_EnState* e, Py_ssize_t mark, uint32_t tag) noexcept:
    # Prepend tag and length to the body written since `mark`.
    if _en_reserve(e, 16) < 0:
        return _EN_BAIL
    _en_varint(e, <uint64_t>(_en_written(e) - mark))
    _en_varint(e, tag)
    return 0


cdef inline int _en_bytes_field(_EnState* e, const char* s, Py_ssize_t n, uint32_t tag) noexcept:
    if _en_reserve(e, n + 16) < 0:
        return _EN_BAIL
    e.pos -= n
    agw_copy(e.pos, s, n)
    _en_varint(e, <uint64_t>n)
    _en_varint(e, tag)
    return 0


cdef inline int _en_string(_EnState* e, PyObject* v, uint32_t tag, bint always) noexcept:
    cdef Py_ssize_t n
    cdef const char* s
    if not capi.PyUnicode_Check(v):
        return _EN_BAIL
    s = agw_utf8(v, &n)
    if s == NULL:           # lone surrogate
        return _EN_BAIL
    if n == 0 and not always:
        return 0            # proto3 leaves an implicit-presence "" unwritten
    return _en_bytes_field(e, s, n, tag)


cdef inline int _en_double(_EnState* e, double d) noexcept:
    # Value.number_value: its tag and the little-endian IEEE bytes.
    cdef uint64_t bits
    cdef int i
    if _en_reserve(e, 9) < 0:
        return _EN_BAIL
    memcpy(&bits, &d, 8)
    e.pos -= 9
    e.pos[0] = _EN_T_NUMBER
    for i in range(8):
        e.pos[1 + i] = <unsigned char>(bits >> (8 * i))
    return 0


cdef inline int _en_raw2(_EnState* e, unsigned char a, unsigned char b) noexcept:
    if _en_reserve(e, 2) < 0:
        return _EN_BAIL
    e.pos -= 2
    e.pos[0] = a
    e.pos[1] = b
    return 0


# -- JSON values (js_key_order, the cycle check, _scalar, _json, _frame, _put) ---------

cdef int _en_cmp_index(const void* a, const void* b) noexcept nogil:
    cdef uint64_t x = (<const _EnIndexKey*>a).number
    cdef uint64_t y = (<const _EnIndexKey*>b).number
    return -1 if x < y else (1 if x > y else 0)


cdef inline bint _en_array_index(PyObject* key, uint64_t* number) noexcept:
    # JavaScript's canonical array index "0".."4294967294" (proto_writer._is_array_index),
    # tested on the UTF-8 bytes: ASCII digits are the same there.
    cdef Py_ssize_t n, i
    cdef const char* s = agw_utf8(key, &n)
    cdef uint64_t x = 0
    if s == NULL:
        capi.PyErr_Clear()     # a lone surrogate: writing the entry will BAIL
        return False
    if n < 1 or n > 10 or s[0] < 48 or s[0] > 57 or (s[0] == 48 and n > 1):
        return False
    for i in range(n):
        if s[i] < 48 or s[i] > 57:
            return False
        x = x * 10 + <uint64_t>(s[i] - 48)
    number[0] = x
    return x <= AGW_U32_MAX - 1


cdef inline bint _en_is_open(_EnState* e, PyObject* obj) noexcept:
    """Whether `obj` is a message-level container open around what is being written
    (schema nesting is shallow, so a scan beats a set)."""
    cdef int i
    for i in range(e.nopen):
        if e.open[i] == obj:
            return True
    return False


cdef inline int _en_enter(_EnState* e, PyObject* obj) noexcept:
    """Open the message-level container `obj` (an event, message, outcome or list of
    them); BAIL if it is open already: a cycle, which proto_writer words; beyond
    _EN_MAXOPEN, BAIL too."""
    if _en_is_open(e, obj) or e.nopen == _EN_MAXOPEN:
        return _EN_BAIL
    e.open[e.nopen] = obj
    e.nopen += 1
    return 0


cdef inline int _en_scalar(_EnState* e, PyObject* v) noexcept:
    """Write the Value body of a JSON scalar: 1 written, 0 a container, BAIL."""
    cdef Py_ssize_t n
    cdef const char* s
    cdef long long i
    cdef int overflow
    cdef double d
    if capi.PyUnicode_CheckExact(v):
        s = agw_utf8(v, &n)
        if s == NULL:
            return _EN_BAIL
        return 1 if _en_bytes_field(e, s, n, _EN_T_STRING) == 0 else _EN_BAIL
    if capi.PyDict_CheckExact(v) or capi.PyList_CheckExact(v):
        return 0
    if capi.PyFloat_CheckExact(v):
        d = capi.PyFloat_AS_DOUBLE(v)
        if not isfinite(d):
            return _EN_BAIL
        return 1 if _en_double(e, d) == 0 else _EN_BAIL
    if v == capi.Py_None:
        return 1 if _en_raw2(e, _EN_T_NULL, 0x00) == 0 else _EN_BAIL
    if v == capi.Py_True:
        return 1 if _en_raw2(e, _EN_T_BOOL, 0x01) == 0 else _EN_BAIL
    if v == capi.Py_False:
        return 1 if _en_raw2(e, _EN_T_BOOL, 0x00) == 0 else _EN_BAIL
    if capi.PyUnicode_Check(v):
        s = agw_utf8(v, &n)
        if s == NULL:
            return _EN_BAIL
        return 1 if _en_bytes_field(e, s, n, _EN_T_STRING) == 0 else _EN_BAIL
    if capi.PyFloat_Check(v):
        d = capi.PyFloat_AS_DOUBLE(v)
        if not isfinite(d):
            return _EN_BAIL
        return 1 if _en_double(e, d) == 0 else _EN_BAIL
    if capi.PyLong_Check(v):
        overflow = 0
        i = capi.PyLong_AsLongLongAndOverflow(v, &overflow)
        if overflow == 0 and -AGW_MAX_EXACT <= i <= AGW_MAX_EXACT:
            d = <double>i
        elif not e.lossy:
            return _EN_BAIL
        else:
            d = capi.PyLong_AsDouble(v)   # rounds like float(); OverflowError past 1e308
            if d == -1.0 and capi.PyErr_Occurred():
                return _EN_BAIL
        return 1 if _en_double(e, d) == 0 else _EN_BAIL
    if capi.PyDict_CheckExact(v) or capi.PyList_CheckExact(v) or capi.PyTuple_CheckExact(v):
        return 0
    return _EN_BAIL


cdef int _en_json(_EnState* e, PyObject* root, bint as_struct) noexcept:
    """A google.protobuf.Value body holding `root`, or (as_struct) the Struct
    body of the dict `root`."""
    cdef int r
    cdef _EnFrame* f
    cdef PyObject* child
    cdef PyObject* key
    cdef Py_ssize_t mark, base = e.nframes
    cdef int kind
    if not as_struct:
        r = _en_scalar(e, root)
        if r != 0:
            return 0 if r == 1 else _EN_BAIL
    if _en_is_open(e, root):
        return _EN_BAIL     # a message-level container again, as a JSON value: a cycle
    agw_ids_clear(&e.deep)      # left over by a walk that bailed
    if _en_push(e, root, NULL, _en_written(e)) < 0:
        return _EN_BAIL
    while True:
        f = &e.frames[e.nframes - 1]
        if f.left > 0:
            f.left -= 1
            if f.kind == 5:
                key = e.pairs[f.pbase + 2 * f.left]
                child = e.pairs[f.pbase + 2 * f.left + 1]
            elif f.kind == 6:
                key = NULL
                child = capi.PyList_GET_ITEM(f.obj, f.left)
            else:
                key = NULL
                child = capi.PyTuple_GET_ITEM(f.obj, f.left)
            mark = _en_written(e)
            r = _en_scalar(e, child)
            if r < 0:
                return _EN_BAIL
            if r == 1:
                if _en_entry(e, f.kind, key, mark) < 0:
                    return _EN_BAIL
                continue
            # a container open on the way down (a cycle): proto_writer words it
            if e.nframes - base >= _EN_DEEP and agw_ids_add(&e.deep, child) != 0:
                return _EN_BAIL
            if e.nframes - base >= e.max_depth:
                return _EN_BAIL     # nested deeper than max_depth
            if _en_push(e, child, key, mark) < 0:
                return _EN_BAIL
            continue
        # the container is complete
        kind = f.kind
        key = f.key
        mark = f.mark
        if kind == 5:
            e.npairs = f.pbase
        e.nframes -= 1
        if e.nframes - base >= _EN_DEEP:
            agw_ids_del(&e.deep, f.obj)
        if e.nframes == base:
            if as_struct:
                return 0
            return _en_close(e, mark, _EN_T_STRUCT if kind == 5 else _EN_T_LIST)
        if _en_close(e, mark, _EN_T_STRUCT if kind == 5 else _EN_T_LIST) < 0:
            return _EN_BAIL
        if _en_entry(e, e.frames[e.nframes - 1].kind, key, mark) < 0:
            return _EN_BAIL


cdef int _en_push(_EnState* e, PyObject* obj, PyObject* key, Py_ssize_t mark) noexcept:
    """Open a JSON container: for an object, park its entries on the pair stack
    in JavaScript property order."""
    cdef _EnFrame* f
    cdef void* mem
    cdef Py_ssize_t n, pos = 0, cap, j, k, nidx = 0
    cdef PyObject* ky
    cdef PyObject* vl
    cdef PyObject** pairs
    cdef uint64_t number
    cdef _EnIndexKey* idx
    if e.nframes == e.frames_cap:
        cap = e.frames_cap * 2 if e.frames_cap else 64
        mem = realloc(e.frames, <size_t>cap * sizeof(_EnFrame))
        if mem == NULL:
            return _EN_BAIL
        e.frames = <_EnFrame*>mem
        e.frames_cap = cap
    f = &e.frames[e.nframes]
    f.obj = obj
    f.key = key
    f.mark = mark
    if capi.PyList_CheckExact(obj):
        f.kind = 6
        f.left = capi.PyList_GET_SIZE(obj)
    elif capi.PyTuple_CheckExact(obj):
        f.kind = 7
        f.left = capi.PyTuple_GET_SIZE(obj)
    else:
        f.kind = 5
        n = capi.PyDict_GET_SIZE(obj)
        if e.npairs + 2 * n > e.pairs_cap:
            cap = e.pairs_cap * 2 if e.pairs_cap else 256
            if cap < e.npairs + 2 * n:
                cap = e.npairs + 2 * n
            mem = realloc(e.pairs, <size_t>cap * sizeof(PyObject*))
            if mem == NULL:
                return _EN_BAIL
            e.pairs = <PyObject**>mem
            e.pairs_cap = cap
        pairs = e.pairs + e.npairs
        j = 0
        while capi.PyDict_Next(obj, &pos, &ky, &vl):
            if not capi.PyUnicode_CheckExact(ky):
                return _EN_BAIL     # not a str key: an error; a str subclass: proto_writer
            pairs[j] = ky
            pairs[j + 1] = vl
            agw_prefetch_read(vl)    # its header is read when the entry is written
            j += 2
            if _en_array_index(ky, &number):
                nidx += 1
        if nidx:
            # integer-like keys first, ascending; the rest keep insertion order
            idx = <_EnIndexKey*>malloc(<size_t>nidx * sizeof(_EnIndexKey))
            if idx == NULL:
                return _EN_BAIL
            k = 0
            for j in range(n):
                if _en_array_index(pairs[2 * j], &number):
                    idx[k].number = number
                    idx[k].key = pairs[2 * j]
                    idx[k].value = pairs[2 * j + 1]
                    k += 1
            # compact the other keys towards the end, keeping their order
            k = n
            for j in range(n - 1, -1, -1):
                if not _en_array_index(pairs[2 * j], &number):
                    k -= 1
                    pairs[2 * k] = pairs[2 * j]
                    pairs[2 * k + 1] = pairs[2 * j + 1]
            qsort(idx, <size_t>nidx, sizeof(_EnIndexKey), _en_cmp_index)
            for j in range(nidx):
                pairs[2 * j] = idx[j].key
                pairs[2 * j + 1] = idx[j].value
            free(idx)
        f.pbase = e.npairs
        f.left = n
        e.npairs += 2 * n
    e.nframes += 1
    return 0


cdef inline int _en_entry(_EnState* e, int kind, PyObject* key, Py_ssize_t mark) noexcept:
    """Wrap the Value body written since `mark` as an entry of its container:
    a Struct map entry {1: key, 2: value} (no key field for "", as ts-proto
    writes it) or a ListValue element."""
    cdef Py_ssize_t n = 0
    cdef const char* s
    if kind == 5:
        s = agw_utf8(key, &n)
        if s == NULL or _en_reserve(e, n + 40) < 0:
            return _EN_BAIL
        _en_varint(e, <uint64_t>(_en_written(e) - mark))
        e.pos -= 1
        e.pos[0] = _EN_T_VALUE
        if n:
            e.pos -= n
            agw_copy(e.pos, s, n)
            _en_varint(e, <uint64_t>n)
            e.pos -= 1
            e.pos[0] = _EN_T_KEY
    elif _en_reserve(e, 12) < 0:
        return _EN_BAIL
    _en_varint(e, <uint64_t>(_en_written(e) - mark))
    e.pos -= 1
    e.pos[0] = _EN_T_FIELDS if kind == 5 else _EN_T_VALUES
    return 0
