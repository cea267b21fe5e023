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

cimport cython
from libc.math cimport floor, isfinite
from libc.stdint cimport uint32_t, uint64_t
from libc.stdlib cimport free, malloc, qsort, realloc
from libc.string cimport memcpy, memset

import sys as _en_sys
from operator import attrgetter as _en_attrgetter

from agui_wire._codec import proto_writer as _en_py
from agui_wire import schema as _en_schema
from agui_wire.errors import EncodeError as _en_EncodeError

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

cdef _EnSpec _en_specs[_EN_MAXSPEC]
cdef _EnSpec _en_events[_EN_MAXEVENTS]  # by index in _en_types
cdef _EnSpec _en_base               # BaseEvent's JSON fields (event slots)
cdef _EnSpec _en_parts[_EN_MAXPARTS]    # content part variants (part slots)
cdef _EnRole _en_roles[_EN_MAXPARTS]
cdef _EnOutcome _en_outcomes[_EN_MAXPARTS]
cdef uint64_t _en_op_required[_EN_MAXPARTS]
cdef _EnSpecial _en_plain           # all zero: no carrier writes

cdef list _en_keep = []             # owns every object the C tables point to
cdef _EnTable* _en_event_index      # every event key -> event slot
cdef _EnTable* _en_types            # event type -> index in _en_events
cdef _EnTable* _en_role_index       # role -> index in _en_roles
cdef _EnTable* _en_ops              # patch op -> enum value (= index in _en_op_required)
cdef _EnTable* _en_part_index       # part keys -> part slot
cdef _EnTable* _en_part_types       # part type -> index in _en_parts
cdef _EnTable* _en_source_types     # source type -> spec index
cdef _EnTable* _en_outcome_index    # outcome keys -> outcome slot
cdef _EnTable* _en_run_outcomes     # RUN_FINISHED outcome type -> index in _en_outcomes
cdef _EnTable* _en_sub_outcomes     # SUBAGENT_FINISHED outcome type -> index in _en_outcomes
cdef dict _en_types_dict            # the same as _en_types, for the Python-level retype path
cdef int _EV_TYPE, _EV_CONTENT, _EV_OUTCOME, _PART_TYPE, _SRC_TYPE, _OC_TYPE
cdef int _MSG_ROLE, _MSG_CONTENT, _OP_SLOT
# one-byte tags of google.protobuf.Value/Struct/ListValue and BaseEvent (from
# agui_wire.schema at import; _en_init checks each fits in one byte)
cdef unsigned char _EN_T_NULL, _EN_T_NUMBER, _EN_T_STRING, _EN_T_BOOL, _EN_T_STRUCT, _EN_T_LIST
cdef unsigned char _EN_T_FIELDS, _EN_T_KEY, _EN_T_VALUE, _EN_T_VALUES
cdef unsigned char _EN_T_BASE_TYPE, _EN_T_BASE_EVENT

cdef _EnState _en_main
cdef bint _en_main_busy = False
cdef unsigned long long _en_fallbacks = 0


# -- the backward writer -----------------------------------------------------------

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


# -- JSON values -------------------------------------------------------------------

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


# -- messages ----------------------------------------------------------------------

cdef inline int _en_collect(
    PyObject* obj, _EnTable* index, PyObject** slots, uint64_t* present, Py_ssize_t* unmatched
) noexcept:
    """Park the values of `obj` in `slots` by key; count keys the index lacks."""
    cdef Py_ssize_t pos = 0, miss = 0
    cdef PyObject* k
    cdef PyObject* v
    cdef uint64_t mask = 0
    cdef int i
    while capi.PyDict_Next(obj, &pos, &k, &v):
        if not capi.PyUnicode_CheckExact(k):
            return _EN_BAIL
        i = _en_lookup(index, k)
        if i < 0:
            miss += 1
            continue
        slots[i] = v
        mask |= (<uint64_t>1) << i
    present[0] = mask
    unmatched[0] = miss
    return 0


cdef inline bint _en_extra(_EnState* e, uint64_t present, Py_ssize_t unmatched, uint64_t known) noexcept:
    return e.extra_error and (unmatched != 0 or (present & ~known) != 0)


cdef int _en_field(_EnState* e, _EnField* f, PyObject* v) noexcept:
    """Write one present, non-null field."""
    cdef Py_ssize_t n, j, mark
    cdef PyObject* item
    cdef long long i
    cdef int overflow
    cdef double d
    cdef int opv
    if f.repeated:
        if capi.PyList_CheckExact(v):
            n = capi.PyList_GET_SIZE(v)
        elif capi.PyTuple_CheckExact(v):
            n = capi.PyTuple_GET_SIZE(v)
        else:
            return _EN_BAIL
        if f.kind == _K_STRING:
            for j in range(n - 1, -1, -1):
                item = capi.PyList_GET_ITEM(v, j) if capi.PyList_CheckExact(v) else capi.PyTuple_GET_ITEM(v, j)
                if _en_string(e, item, f.tag, True) < 0:
                    return _EN_BAIL
            return 0
        if _en_enter(e, v) < 0:
            return _EN_BAIL
        for j in range(n - 1, -1, -1):
            item = capi.PyList_GET_ITEM(v, j) if capi.PyList_CheckExact(v) else capi.PyTuple_GET_ITEM(v, j)
            mark = _en_written(e)
            if _en_message(e, &_en_specs[f.sub], item) < 0:
                return _EN_BAIL
            if _en_close(e, mark, f.tag) < 0:
                return _EN_BAIL
        e.nopen -= 1
        return 0
    if f.kind == _K_STRING:
        return _en_string(e, v, f.tag, f.presence)
    if f.kind == _K_VALUE or f.kind == _K_STRUCT or f.kind == _K_MESSAGE:
        mark = _en_written(e)
        if f.kind == _K_VALUE:
            if _en_json(e, v, False) < 0:
                return _EN_BAIL
        elif f.kind == _K_STRUCT:
            if not capi.PyDict_CheckExact(v) or _en_json(e, v, True) < 0:
                return _EN_BAIL
        elif _en_message(e, &_en_specs[f.sub], v) < 0:
            return _EN_BAIL
        return _en_close(e, mark, f.tag)
    if _en_reserve(e, 16) < 0:
        return _EN_BAIL
    if f.kind == _K_INT64:
        if v == capi.Py_True or v == capi.Py_False:
            return _EN_BAIL
        if capi.PyLong_Check(v):
            overflow = 0
            i = capi.PyLong_AsLongLongAndOverflow(v, &overflow)
            if overflow or i < -AGW_MAX_SAFE or i > AGW_MAX_SAFE:
                return _EN_BAIL
        elif capi.PyFloat_Check(v):
            d = capi.PyFloat_AS_DOUBLE(v)
            if not isfinite(d) or floor(d) != d or d < -<double>AGW_MAX_SAFE or d > <double>AGW_MAX_SAFE:
                return _EN_BAIL
            i = <long long>d
        else:
            return _EN_BAIL
        _en_varint(e, <uint64_t>i)     # negatives: ten-byte two's complement
    elif f.kind == _K_BOOL:
        if v == capi.Py_True:
            _en_varint(e, 1)
        elif v == capi.Py_False:
            _en_varint(e, 0)
        else:
            return _EN_BAIL
    else:  # _K_PATCH_OP
        if not capi.PyUnicode_CheckExact(v):
            return _EN_BAIL
        opv = _en_lookup(_en_ops, v)
        if opv < 0:
            return _EN_BAIL
        if opv == 0:
            return 0        # "add" is the enum default: not written
        _en_varint(e, <uint64_t>opv)
    _en_varint(e, f.tag)
    return 0


cdef int _en_special(_EnState* e, _EnField* f, _EnSpecial* x) noexcept:
    """A carrier field of a special shape: written if `x` chose it."""
    cdef Py_ssize_t mark
    if f.kind == x.carrier:
        if f.kind == _K_CONTENT_STR:
            return _en_string(e, x.content, f.tag, True)
        if f.kind == _K_CONTENT_PARTS:
            return _en_content_parts(e, x.content, f.tag)
        mark = _en_written(e)
        if _en_json(e, x.content, True) < 0:
            return _EN_BAIL
        return _en_close(e, mark, f.tag)
    if f.kind == _K_OUTCOME_TYPE and x.otype != NULL:
        return _en_string(e, x.otype, f.tag, True)
    if f.kind == _K_OUTCOME_PAYLOAD and x.payload != NULL and x.payload_field.number == f.number:
        return _en_field(e, x.payload_field, x.payload)
    return 0


cdef int _en_fields(
    _EnState* e, _EnSpec* sp, PyObject** slots, uint64_t present, uint64_t required,
    _EnSpecial* x
) noexcept:
    """Write the fields of `sp` in descending number: the 1:1 fields from
    `slots`, the carriers of the special shapes as `x` says. `required` adds
    slots a discriminator (role, op) makes required."""
    cdef int i
    cdef _EnField* f
    cdef PyObject* v
    for i in range(sp.nfields - 1, -1, -1):
        f = &sp.fields[i]
        if f.kind >= _K_CONTENT_STR:
            if _en_special(e, f, x) < 0:
                return _EN_BAIL
            continue
        v = slots[f.slot] if (present >> f.slot) & 1 else NULL
        if v == NULL or v == capi.Py_None:
            if v != NULL and f.nullable:
                # JSON null as a value: Value{null_value: 0}
                if _en_raw2(e, _EN_T_NULL, 0x00) < 0 or _en_close(e, _en_written(e) - 2, f.tag) < 0:
                    return _EN_BAIL
            elif f.required or (required >> f.slot) & 1:
                return _EN_BAIL
            continue
        if f.kind == _K_STRING and not f.repeated:
            if _en_string(e, v, f.tag, f.presence) < 0:
                return _EN_BAIL
        elif _en_field(e, f, v) < 0:
            return _EN_BAIL
    return 0


cdef inline int _en_union(
    _EnState* e, PyObject** slots, uint64_t present, Py_ssize_t unmatched, int type_slot,
    _EnTable* types, _EnSpec* arms
) noexcept:
    """A JSON union on `type` (a content part, a source): the fields of the arm its
    `type` names (`types`: type -> index in `arms`), inside that arm's oneof field."""
    cdef int r
    cdef _EnSpec* sp
    cdef Py_ssize_t mark
    if not (present >> type_slot) & 1 or not capi.PyUnicode_CheckExact(slots[type_slot]):
        return _EN_BAIL
    r = _en_lookup(types, slots[type_slot])
    if r < 0:
        return _EN_BAIL
    sp = &arms[r]
    if _en_extra(e, present, unmatched, sp.known):
        return _EN_BAIL
    mark = _en_written(e)
    if _en_fields(e, sp, slots, present, 0, &_en_plain) < 0:
        return _EN_BAIL
    return _en_close(e, mark, sp.arm_tag)


cdef int _en_content_parts(_EnState* e, PyObject* seq, uint32_t tag) noexcept:
    """Repeated InputContent: each part in the oneof arm its `type` names."""
    cdef PyObject* slots[_EN_MAXSLOT]
    cdef uint64_t present
    cdef Py_ssize_t unmatched, n, j, mark
    cdef PyObject* part
    n = capi.PyList_GET_SIZE(seq) if capi.PyList_CheckExact(seq) else capi.PyTuple_GET_SIZE(seq)
    if _en_enter(e, seq) < 0:
        return _EN_BAIL
    for j in range(n - 1, -1, -1):
        part = capi.PyList_GET_ITEM(seq, j) if capi.PyList_CheckExact(seq) else capi.PyTuple_GET_ITEM(seq, j)
        if not capi.PyDict_CheckExact(part) or _en_enter(e, part) < 0:
            return _EN_BAIL
        if _en_collect(part, _en_part_index, slots, &present, &unmatched) < 0:
            return _EN_BAIL
        mark = _en_written(e)
        if _en_union(e, slots, present, unmatched, _PART_TYPE, _en_part_types, _en_parts) < 0 \
                or _en_close(e, mark, tag) < 0:
            return _EN_BAIL
        e.nopen -= 1
    e.nopen -= 1
    return 0


cdef int _en_message(_EnState* e, _EnSpec* sp, PyObject* obj) noexcept:
    """The body of a nested message holding the JSON object `obj`."""
    if not capi.PyDict_CheckExact(obj) or _en_enter(e, obj) < 0:
        return _EN_BAIL
    if _en_message_body(e, sp, obj) < 0:
        return _EN_BAIL
    e.nopen -= 1
    return 0


cdef inline int _en_message_body(_EnState* e, _EnSpec* sp, PyObject* obj) noexcept:
    cdef PyObject* slots[_EN_MAXSLOT]
    cdef uint64_t present, required = 0
    cdef Py_ssize_t unmatched
    cdef PyObject* v
    cdef int r
    cdef _EnRole* role
    cdef int allowed = 7
    cdef bint content_required = False
    cdef _EnSpecial x
    if _en_collect(obj, sp.index, slots, &present, &unmatched) < 0:
        return _EN_BAIL
    if sp.special == _SP_PLAIN:
        if _en_extra(e, present, unmatched, sp.known):
            return _EN_BAIL
        return _en_fields(e, sp, slots, present, 0, &_en_plain)
    if sp.special == _SP_SOURCE:
        return _en_union(e, slots, present, unmatched, _SRC_TYPE, _en_source_types, _en_specs)
    if sp.special == _SP_PATCH:
        if (present >> _OP_SLOT) & 1 and capi.PyUnicode_Check(slots[_OP_SLOT]):
            if not capi.PyUnicode_CheckExact(slots[_OP_SLOT]):
                return _EN_BAIL
            r = _en_lookup(_en_ops, slots[_OP_SLOT])
            if r >= 0:
                required = _en_op_required[r]
        if _en_extra(e, present, unmatched, sp.known):
            return _EN_BAIL
        return _en_fields(e, sp, slots, present, required, &_en_plain)
    # _SP_CHAT: `content` rides the carrier its JSON type names, if the role allows
    if (present >> _MSG_ROLE) & 1 and capi.PyUnicode_Check(slots[_MSG_ROLE]):
        if not capi.PyUnicode_CheckExact(slots[_MSG_ROLE]):
            return _EN_BAIL
        r = _en_lookup(_en_role_index, slots[_MSG_ROLE])
        if r >= 0:
            role = &_en_roles[r]
            required = role.required
            content_required = role.content_required
            allowed = role.allowed
    if _en_extra(e, present, unmatched, sp.known):
        return _EN_BAIL
    v = slots[_MSG_CONTENT] if (present >> _MSG_CONTENT) & 1 else NULL
    x = _en_plain
    x.content = v
    if v == NULL or v == capi.Py_None:
        if content_required:
            return _EN_BAIL
    elif capi.PyUnicode_Check(v) and allowed & 1:
        x.carrier = _K_CONTENT_STR
    elif (capi.PyList_CheckExact(v) or capi.PyTuple_CheckExact(v)) and allowed & 2:
        x.carrier = _K_CONTENT_PARTS
    elif capi.PyDict_CheckExact(v) and allowed & 4:
        x.carrier = _K_CONTENT_MAP
    else:
        return _EN_BAIL
    return _en_fields(e, sp, slots, present, required, &x)


cdef int _en_outcome(
    _EnState* e, PyObject* outcome, _EnTable* table, PyObject** otype, _EnOutcome** spec,
    PyObject** payload
) noexcept:
    """RUN_FINISHED / SUBAGENT_FINISHED `outcome` {type, payload}: check it and
    find what gets written (the type string, the payload list)."""
    cdef PyObject* slots[_EN_MAXSLOT]
    cdef uint64_t present, known
    cdef Py_ssize_t unmatched
    cdef int r
    cdef _EnOutcome* oc = NULL
    # open until the event is done (its payload is written with the arm's fields)
    if not capi.PyDict_CheckExact(outcome) or _en_enter(e, outcome) < 0:
        return _EN_BAIL
    if _en_collect(outcome, _en_outcome_index, slots, &present, &unmatched) < 0:
        return _EN_BAIL
    if not (present >> _OC_TYPE) & 1:
        return _EN_BAIL
    otype[0] = slots[_OC_TYPE]
    if not capi.PyUnicode_CheckExact(otype[0]) or capi.PyUnicode_GET_LENGTH(otype[0]) == 0:
        return _EN_BAIL
    payload[0] = NULL
    known = (<uint64_t>1) << _OC_TYPE
    r = _en_lookup(table, otype[0])
    if r >= 0:
        oc = &_en_outcomes[r]
        if oc.slot >= 0:
            known |= (<uint64_t>1) << oc.slot
            if (present >> oc.slot) & 1 and slots[oc.slot] != capi.Py_None:
                payload[0] = slots[oc.slot]
            elif oc.required:
                return _EN_BAIL
    if _en_extra(e, present, unmatched, known):
        return _EN_BAIL
    spec[0] = oc
    return 0


cdef int _en_event(_EnState* e, PyObject* event, PyObject* forced, long forced_index) noexcept:
    """The Event message: the arm's body (its base event first), in the arm.
    `forced`: a str-subclass `type` already looked up in Python (its spec is
    `forced_index`); the event must still carry that very object."""
    cdef PyObject* slots[_EN_MAXSLOT]
    cdef uint64_t present
    cdef Py_ssize_t unmatched, mark_event, mark_base
    cdef PyObject* t
    cdef int r
    cdef PyObject* v
    cdef PyObject* otype = NULL
    cdef PyObject* payload = NULL
    cdef _EnOutcome* oc = NULL
    cdef _EnSpec* sp
    cdef _EnSpecial x = _en_plain
    if not capi.PyDict_CheckExact(event):
        return _EN_BAIL
    e.open[0] = event
    e.nopen = 1
    if _en_collect(event, _en_event_index, slots, &present, &unmatched) < 0:
        return _EN_BAIL
    if not (present >> _EV_TYPE) & 1:
        return _EN_BAIL
    t = slots[_EV_TYPE]
    if forced != NULL:
        if t != forced:
            return _EN_BAIL
        sp = &_en_events[forced_index]
    elif capi.PyUnicode_CheckExact(t):
        r = _en_lookup(_en_types, t)
        if r < 0:
            return _EN_BAIL
        sp = &_en_events[r]
    elif capi.PyUnicode_Check(t):
        return _EN_RETYPE
    else:
        return _EN_BAIL
    if _en_extra(e, present, unmatched, sp.known):
        return _EN_BAIL
    mark_event = _en_written(e)
    # the arm's fields, descending; the carriers of its special shape among them
    if sp.special == _EV_TOOL_CALL_RESULT:
        v = slots[_EV_CONTENT] if (present >> _EV_CONTENT) & 1 else NULL
        if v == NULL or v == capi.Py_None:
            return _EN_BAIL
        if capi.PyUnicode_Check(v):
            x.carrier = _K_CONTENT_STR
        elif capi.PyList_CheckExact(v) or capi.PyTuple_CheckExact(v):
            x.carrier = _K_CONTENT_PARTS
        else:
            return _EN_BAIL
        x.content = v
    elif sp.special == _EV_RUN_FINISHED or sp.special == _EV_SUBAGENT_FINISHED:
        v = slots[_EV_OUTCOME] if (present >> _EV_OUTCOME) & 1 else NULL
        if v != NULL and v != capi.Py_None:
            if _en_outcome(
                e, v, _en_run_outcomes if sp.special == _EV_RUN_FINISHED else _en_sub_outcomes,
                &otype, &oc, &payload
            ) < 0:
                return _EN_BAIL
            x.otype = otype
            if payload != NULL:
                x.payload = payload
                x.payload_field = &oc.field
    if _en_fields(e, sp, slots, present, 0, &x) < 0:
        return _EN_BAIL
    # base_event (the lowest number: checked at import), written even when empty
    mark_base = _en_written(e)
    if present & _en_base.known and _en_fields(e, &_en_base, slots, present, 0, &_en_plain) < 0:
        return _EN_BAIL
    if sp.type_value:
        if _en_reserve(e, 16) < 0:
            return _EN_BAIL
        _en_varint(e, sp.type_value)
        _en_varint(e, _EN_T_BASE_TYPE)
    if _en_close(e, mark_base, _EN_T_BASE_EVENT) < 0:
        return _EN_BAIL
    return _en_close(e, mark_event, sp.arm_tag)


# -- state, options, entry points ------------------------------------------------------

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


cdef long _EN_MAX_DEPTH_LIMIT = _en_schema.MAX_DEPTH_LIMIT
cdef object _EN_DROP = "drop"       # the same interned objects as the defaults
cdef object _EN_ERROR = "error"


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


cdef inline int _en_run(_EnState* e, object event) noexcept:
    """Encode `event` into e: 0 done, BAIL for proto_writer."""
    cdef int r = _en_event(e, <PyObject*>event, NULL, 0)
    if r == _EN_RETYPE:
        r = _en_retype(e, event)
    if r < 0:
        capi.PyErr_Clear()     # a failed UTF-8 conversion leaves its exception set
        return _EN_BAIL
    return 0


cdef inline void _en_be32(unsigned char* p, uint64_t n) noexcept:
    p[0] = <unsigned char>(n >> 24)
    p[1] = <unsigned char>(n >> 16)
    p[2] = <unsigned char>(n >> 8)
    p[3] = <unsigned char>n


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
                raise _en_EncodeError(
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


@cython.binding(False)     # a plain builtin: the cheapest call CPython has
def encode_payload(event, *, lossy_numbers=False, extra_keys="drop", max_depth=1024):
    """encode_payload(event, *, lossy_numbers=False, extra_keys="drop", max_depth=1024) -> bytes

    The serialized ``ag_ui.Event`` for one event dict (no length prefix).
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
    return _en_py.encode_payload(
        event, lossy_numbers=lossy_numbers, extra_keys=extra_keys, max_depth=max_depth
    )


@cython.binding(False)     # a plain builtin: the cheapest call CPython has
def encode_frame(event, *, lossy_numbers=False, extra_keys="drop", max_depth=1024):
    """encode_frame(event, *, lossy_numbers=False, extra_keys="drop", max_depth=1024) -> bytes

    One binary frame for ``event``: 4-byte big-endian length + ``ag_ui.Event``
    (public as ``agui_wire.encode_proto``).

    ``event`` is a dict shaped as ``@ag-ui/core`` JSON, or an official SDK pydantic
    event (``as_event_dict``). Byte-identical to ``@ag-ui/proto`` 1.0.0 for valid
    events. Raises ``EncodeError`` (event type, JSON pointer, reason) for anything
    the wire cannot carry faithfully; see docs/wire-format.md for the rules.
    """
    cdef Py_ssize_t depth = 0
    if type(event) is not dict:
        event = _en_py.as_event_dict(event)
    cdef int flags = _en_options(
        <PyObject*>lossy_numbers, <PyObject*>extra_keys, <PyObject*>max_depth, &depth
    )
    cdef object out
    if flags >= 0:
        out = _en_one(event, flags, depth, True)
        if out is not None:
            return out
        out = _en_refused(event, lossy_numbers, extra_keys, max_depth, flags, depth)
        return _en_py._prefix(out) + out
    return _en_py.encode_frame(
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
    """encode_frames(events, *, lossy_numbers=False, extra_keys="drop", max_depth=1024) -> bytes

    Frames for several events, concatenated: a binary stream body.
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
        return _en_py.encode_frames(
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
                        raise _en_EncodeError(
                            f"event encodes to {n} bytes, more than a frame can carry"
                        )
                    _en_append(&out, &size, &cap, e.pos, n)
            finally:
                _en_release(e)
            if r != 0:
                _en_fallbacks += 1
                payload = _en_refused(event, lossy_numbers, extra_keys, max_depth, flags, depth)
                _en_py._prefix(payload)
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

    ``encode_frame`` with its options bound, for a caller that encodes event
    after event (``EventEncoder``): ``.encode(event)`` is one C call with no
    keyword parsing. An event that is not a ``dict`` goes through ``convert``
    first (the official SDK's pydantic events); ``convert=None`` leaves it as is.
    """

    cdef int flags
    cdef Py_ssize_t depth
    cdef object convert
    cdef object lossy_numbers, extra_keys, max_depth

    def __init__(self, *, lossy_numbers=False, extra_keys="drop", max_depth=1024, convert=None):
        _en_py._check_options(extra_keys, max_depth, lossy_numbers)
        self.flags = _en_options(
            <PyObject*>lossy_numbers, <PyObject*>extra_keys, <PyObject*>max_depth, &self.depth
        )
        self.lossy_numbers = lossy_numbers
        self.extra_keys = extra_keys
        self.max_depth = max_depth
        self.convert = convert

    def encode(self, event):
        """encode(event) -> bytes: one frame."""
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
            return _en_py._prefix(out) + out
        return _en_py.encode_frame(
            event,
            lossy_numbers=self.lossy_numbers,
            extra_keys=self.extra_keys,
            max_depth=self.max_depth,
        )

    def encode_many(self, events):
        """encode_many(events) -> bytes: the frames of several events, concatenated."""
        if self.convert is not None:
            convert = self.convert
            events = [e if type(e) is dict else convert(e) for e in events]
        return encode_frames(
            events,
            lossy_numbers=self.lossy_numbers,
            extra_keys=self.extra_keys,
            max_depth=self.max_depth,
        )


# -- refusals: where proto_writer's walk meets the first fault of a JSON value ------
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


# -- refusals: the first fault of an event, when it is in a top-level field -------
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
    cdef object found = _en_find(event, flags & 1, depth)
    if found is not None:
        _en_py._refuse(event, *found, lossy_numbers, extra_keys, max_depth, _json_value)
    return _en_py._encode(event, lossy_numbers, extra_keys, max_depth, _json_value)


# -- tables from agui_wire.schema ----------------------------------------------------

cdef uint32_t _en_wire_type(int kind) except? 0:
    if kind >= _K_CONTENT_STR:
        return _en_schema.WIRE_LEN     # every carrier is length-delimited
    return _en_schema.KIND_WIRE_TYPE[_en_schema.Kind(kind)]


cdef unsigned char _en_tag1(int number, int wire_type) except? 0:
    # A tag the writer stores as one byte.
    cdef int tag = (number << 3) | wire_type
    if not 0 < tag < 0x80:
        raise ImportError(f"agui_wire._fast: tag {tag:#x} is not one byte, as the encoder writes it")
    return <unsigned char>tag


cdef tuple _en_with(object fields, object carriers):
    """`fields` and the carriers of a special shape ((number, kind, JSON key) each,
    as fields whose kind says what they write), ascending by number."""
    extra = [_en_schema.Field(key, number, kind) for number, kind, key in carriers]
    out = tuple(sorted([*fields, *extra], key=_en_attrgetter("number")))
    if len({f.number for f in out}) != len(out):
        raise ImportError("agui_wire._fast: two fields of a message share a number")
    return out


cdef object _en_key(str name):
    key = _en_sys.intern(name)
    _en_keep.append(key)
    return key


cdef list _en_outcome_carriers(int number, object payloads):
    # an outcome's type string and the payload lists it may carry
    return [(number, _K_OUTCOME_TYPE, "outcome")] + [
        (p[1], _K_OUTCOME_PAYLOAD, "outcome") for p in payloads.values() if p is not None
    ]


cdef void _en_fill_field(_EnField* fd, object f, dict index, dict spec_ids) except *:
    if f.kind < _K_CONTENT_STR and f.kind not in _en_schema.KIND_WIRE_TYPE:
        raise ImportError(f"agui_wire._fast: {f.name}: a field kind the encoder has no code for")
    if f.repeated and f.kind not in (_K_STRING, _K_MESSAGE):
        raise ImportError(f"agui_wire._fast: {f.name}: a repeated field of a kind the encoder has no code for")
    if not 0 < f.number < (1 << 29):
        raise ImportError(f"agui_wire._fast: {f.name}: field number {f.number} out of range")
    key = _en_key(f.name)       # kept alive by _en_keep
    fd.key = <PyObject*>key
    fd.number = f.number
    fd.kind = int(f.kind)
    fd.slot = index[f.name]
    fd.sub = spec_ids[f.message] if f.message is not None else -1
    fd.tag = (<uint32_t>f.number << 3) | _en_wire_type(fd.kind)
    fd.repeated = f.repeated
    fd.presence = f.presence
    fd.required = f.required
    fd.nullable = f.nullable


cdef uint64_t _en_fill(
    _EnSpec* sp, object fields, dict index, dict spec_ids, int special, tuple more=()
) except? 0:
    """A spec over `index`; returns its `known` slot mask."""
    cdef int i
    fields = tuple(fields)
    if len(fields) > _EN_MAXF:
        raise ImportError("agui_wire._fast: a message has more fields than the encoder holds")
    sp.nfields = len(fields)
    sp.special = special
    sp.index = _en_table(index)
    sp.arm_tag = 0
    sp.type_value = 0
    for i, f in enumerate(fields):
        _en_fill_field(&sp.fields[i], f, index, spec_ids)
    known = 0
    for name in [f.name for f in fields] + list(more):
        known |= 1 << index[name]
    sp.known = known
    return known | 1    # never 0 (the except? value)


cdef dict _en_tables = {}          # id(dict) -> its _EnTable, built once


cdef _EnTable* _en_table(dict mapping) except NULL:
    """The C table of a str -> int dict (whose keys _en_keep holds)."""
    cdef _EnTable* t
    cdef Py_ssize_t size = 8, i
    cdef object key
    if id(mapping) in _en_tables:
        return <_EnTable*><size_t>_en_tables[id(mapping)]
    while size < 2 * len(mapping):
        size *= 2
    if size > _EN_TABLE:
        raise ImportError("agui_wire._fast: an encoder table is too small")
    t = <_EnTable*>malloc(sizeof(_EnTable))     # lives as long as the module
    if t == NULL:
        raise MemoryError()
    t.mask = size - 1
    for i in range(_EN_TABLE):
        t.keys[i] = NULL
    for key, value in mapping.items():
        if type(key) is not str or not 0 <= value < 0x7FFFFFFF:
            raise ImportError("agui_wire._fast: bad encoder table entry")
        i = hash(key) & t.mask
        while t.keys[i] != NULL:
            i = (i + 1) & t.mask
        t.keys[i] = <PyObject*>key
        t.hashes[i] = hash(key)
        t.values[i] = value
    _en_keep.append(mapping)
    _en_tables[id(mapping)] = <size_t>t
    return t


cdef dict _en_index(object names):
    """key -> slot for `names` (interned keys), kept alive in _en_keep."""
    index = {}
    for name in names:
        if name not in index:
            index[_en_key(name)] = len(index)
    if len(index) > _EN_MAXSLOT:
        raise ImportError("agui_wire._fast: more JSON keys than an encoder index holds")
    _en_keep.append(index)
    return index


cdef void _en_init() except *:
    global _en_event_index, _en_types, _en_role_index, _en_ops
    global _en_part_index, _en_part_types, _en_source_types, _en_outcome_index
    global _en_run_outcomes, _en_sub_outcomes, _en_types_dict
    global _EV_TYPE, _EV_CONTENT, _EV_OUTCOME, _PART_TYPE, _SRC_TYPE, _OC_TYPE
    global _MSG_ROLE, _MSG_CONTENT, _OP_SLOT
    global _EN_T_NULL, _EN_T_NUMBER, _EN_T_STRING, _EN_T_BOOL, _EN_T_STRUCT, _EN_T_LIST
    global _EN_T_FIELDS, _EN_T_KEY, _EN_T_VALUE, _EN_T_VALUES, _EN_T_BASE_TYPE, _EN_T_BASE_EVENT
    cdef int i
    sc = _en_schema
    M = sc.MESSAGES
    if AGW_MAX_EXACT != sc.MAX_EXACT_INT or AGW_MAX_SAFE != sc.MAX_SAFE_INTEGER \
            or AGW_U32_MAX != sc.MAX_FRAME_PAYLOAD:
        raise ImportError("agui_wire._fast: the encoder's integer limits differ from the schema's")
    _EN_T_NULL = _en_tag1(sc.VALUE_NULL, sc.WIRE_VARINT)
    _EN_T_NUMBER = _en_tag1(sc.VALUE_NUMBER, sc.WIRE_I64)
    _EN_T_STRING = _en_tag1(sc.VALUE_STRING, sc.WIRE_LEN)
    _EN_T_BOOL = _en_tag1(sc.VALUE_BOOL, sc.WIRE_VARINT)
    _EN_T_STRUCT = _en_tag1(sc.VALUE_STRUCT, sc.WIRE_LEN)
    _EN_T_LIST = _en_tag1(sc.VALUE_LIST, sc.WIRE_LEN)
    _EN_T_FIELDS = _en_tag1(sc.STRUCT_FIELDS, sc.WIRE_LEN)
    _EN_T_KEY = _en_tag1(sc.STRUCT_KEY, sc.WIRE_LEN)
    _EN_T_VALUE = _en_tag1(sc.STRUCT_VALUE, sc.WIRE_LEN)
    _EN_T_VALUES = _en_tag1(sc.LIST_VALUES, sc.WIRE_LEN)
    _EN_T_BASE_TYPE = _en_tag1(sc.BASE_TYPE_NUMBER, sc.WIRE_VARINT)
    _EN_T_BASE_EVENT = _en_tag1(sc.BASE_EVENT_NUMBER, sc.WIRE_LEN)
    # the base event is written last, backwards: it must be the lowest field
    if any(f.number <= sc.BASE_TYPE_NUMBER for f in sc.BASE_FIELDS) or any(
        f.number <= sc.BASE_EVENT_NUMBER for ev in sc.EVENTS.values() for f in ev.message.fields
    ):
        raise ImportError("agui_wire._fast: the base event (or its type) is not the lowest field")
    # _en_find meets the fields in ascending number: proto_writer's order only if
    # the schema lists them so
    for fields in [sc.BASE_FIELDS, *(ev.message.fields for ev in sc.EVENTS.values())]:
        if [f.number for f in fields] != sorted(f.number for f in fields):
            raise ImportError("agui_wire._fast: an event's fields are not in ascending number")
    if not (
        len(sc.EVENTS) <= _EN_MAXEVENTS and len(sc.PART_ARMS) <= _EN_MAXPARTS
        and len(sc.ROLE_REQUIRED) <= _EN_MAXPARTS and len(sc.PATCH_OPS) <= _EN_MAXPARTS
        and len(sc.RUN_OUTCOME_PAYLOAD) + len(sc.SUBAGENT_OUTCOME_PAYLOAD) <= _EN_MAXPARTS
    ):
        raise ImportError("agui_wire._fast: more event types, parts, roles, ops or outcomes than the encoder holds")
    source_names = {name for _, name in sc.SOURCE_ARMS.values()}
    part_names = {name for _, name in sc.PART_ARMS.values()}
    # spec ids first: fields refer to one another by id
    spec_ids = {}
    for name in M:
        if name in part_names or name == "InputContent":
            continue    # parts live in _en_parts, reached only through content
        spec_ids[name] = len(spec_ids)
    if len(spec_ids) > _EN_MAXSPEC:
        raise ImportError("agui_wire._fast: more messages than the encoder holds")
    source_index = _en_index(["type"] + [f.name for n in sorted(source_names) for f in M[n].fields])
    _SRC_TYPE = source_index["type"]
    for name, i in spec_ids.items():
        spec = M[name]
        if name == "Message":
            index = _en_index([f.name for f in spec.fields] + ["content"])
            carriers = _en_with(spec.fields, [
                (sc.MESSAGE_CONTENT["str"], _K_CONTENT_STR, "content"),
                (sc.MESSAGE_CONTENT["list"], _K_CONTENT_PARTS, "content"),
                (sc.MESSAGE_CONTENT["dict"], _K_CONTENT_MAP, "content"),
            ])
            _en_fill(&_en_specs[i], carriers, index, spec_ids, _SP_CHAT, ("content",))
            _MSG_ROLE = index["role"]
            _MSG_CONTENT = index["content"]
            message_index = index
        elif name == "JsonPatchOperation":
            index = _en_index([f.name for f in spec.fields])
            _en_fill(&_en_specs[i], spec.fields, index, spec_ids, _SP_PATCH)
            _OP_SLOT = index["op"]
            patch_index = index
        elif name == "InputContentSource":
            _en_fill(&_en_specs[i], (), source_index, spec_ids, _SP_SOURCE)
        elif name in source_names:
            _en_fill(&_en_specs[i], spec.fields, source_index, spec_ids, _SP_PLAIN, ("type",))
        else:
            index = _en_index([f.name for f in spec.fields])
            _en_fill(&_en_specs[i], spec.fields, index, spec_ids, _SP_PLAIN)
    source_types = {}
    for stype, (arm, name) in sc.SOURCE_ARMS.items():
        _en_specs[spec_ids[name]].arm_tag = (<uint32_t>arm << 3) | 2
        source_types[_en_key(stype)] = spec_ids[name]
    _en_source_types = _en_table(source_types)
    # content parts: a union over every part's keys
    part_index = _en_index(["type"] + [f.name for n in sorted(part_names) for f in M[n].fields])
    _PART_TYPE = part_index["type"]
    part_types = {}
    for i, (ptype, (arm, name)) in enumerate(sc.PART_ARMS.items()):
        _en_fill(&_en_parts[i], M[name].fields, part_index, spec_ids, _SP_PLAIN, ("type",))
        _en_parts[i].arm_tag = (<uint32_t>arm << 3) | 2
        part_types[_en_key(ptype)] = i
    _en_part_index = _en_table(part_index)
    _en_part_types = _en_table(part_types)
    # roles
    roles = {}
    for i, (role, required) in enumerate(sc.ROLE_REQUIRED.items()):
        mask = 0
        for name in required:
            if name != "content":
                mask |= 1 << message_index[name]
        _en_roles[i].required = mask
        _en_roles[i].content_required = "content" in required
        _en_roles[i].allowed = sum({"str": 1, "list": 2, "dict": 4}[c] for c in sc.ROLE_CONTENT[role])
        roles[_en_key(role)] = i
    _en_role_index = _en_table(roles)
    # patch ops: enum value, also the index of its requirement mask
    ops = {}
    for i, op in enumerate(sc.PATCH_OPS):
        mask = 0
        for name in sc.OP_REQUIRED.get(op, ()):
            mask |= 1 << patch_index[name]
        _en_op_required[i] = mask
        ops[_en_key(op)] = i
    _en_ops = _en_table(ops)
    # events: one index over every event's keys
    E = sc.EVENTS
    base_names = [f.name for f in sc.BASE_FIELDS]
    event_index = _en_index(
        ["type", "outcome", "content"] + base_names
        + [f.name for t in E for f in E[t].message.fields]
    )
    _EV_TYPE = event_index["type"]
    _EV_OUTCOME = event_index["outcome"]
    _EV_CONTENT = event_index["content"]
    _en_fill(&_en_base, sc.BASE_FIELDS, event_index, spec_ids, _SP_PLAIN)
    specials = {
        "RUN_FINISHED": (_EV_RUN_FINISHED, ("outcome",), _en_outcome_carriers(
            sc.RUN_OUTCOME_NUMBER, sc.RUN_OUTCOME_PAYLOAD)),
        "SUBAGENT_FINISHED": (_EV_SUBAGENT_FINISHED, ("outcome",), _en_outcome_carriers(
            sc.SUBAGENT_OUTCOME_NUMBER, sc.SUBAGENT_OUTCOME_PAYLOAD)),
        "TOOL_CALL_RESULT": (_EV_TOOL_CALL_RESULT, ("content",), [
            (sc.TOOL_RESULT_CONTENT["str"], _K_CONTENT_STR, "content"),
            (sc.TOOL_RESULT_CONTENT["list"], _K_CONTENT_PARTS, "content"),
        ]),
    }
    types = {}
    for i, etype in enumerate(sc.EVENT_TYPES):
        ev = E[etype]
        special, more, carriers = specials.get(etype, (_SP_PLAIN, (), ()))
        _en_fill(
            &_en_events[i], _en_with(ev.message.fields, carriers), event_index, spec_ids,
            special, ("type", *base_names, *more),
        )
        _en_events[i].arm_tag = (<uint32_t>ev.arm << 3) | 2
        _en_events[i].type_value = ev.type_value
        types[_en_key(etype)] = i
    _en_types = _en_table(types)
    _en_types_dict = types
    _en_event_index = _en_table(event_index)
    # outcomes: the payload list of each outcome type, as proto_writer writes it
    outcome_index = _en_index(["type"] + sorted({
        p[0] for payloads in (sc.RUN_OUTCOME_PAYLOAD, sc.SUBAGENT_OUTCOME_PAYLOAD)
        for p in payloads.values() if p is not None
    }))
    _OC_TYPE = outcome_index["type"]
    _en_outcome_index = _en_table(outcome_index)
    n = 0
    for name, payloads, required in (
        ("run", sc.RUN_OUTCOME_PAYLOAD, sc.RUN_OUTCOME_REQUIRED),
        ("subagent", sc.SUBAGENT_OUTCOME_PAYLOAD, {}),
    ):
        table = {}
        for otype, payload in payloads.items():
            if payload is None:
                _en_outcomes[n].slot = -1
                _en_outcomes[n].required = False
            else:
                key, number = payload
                _en_outcomes[n].slot = outcome_index[key]
                _en_outcomes[n].required = key in required.get(otype, ())
                _en_fill_field(
                    &_en_outcomes[n].field, sc.OUTCOME_FIELDS[number, key], outcome_index,
                    spec_ids,
                )
            table[_en_key(otype)] = n
            n += 1
        if name == "run":
            _en_run_outcomes = _en_table(table)
        else:
            _en_sub_outcomes = _en_table(table)


_en_init()


def _encoder_fallbacks():
    """How many events the C encoder handed to proto_writer (errors, exotic
    input) since import; for tests that check the fast path covers valid events."""
    return _en_fallbacks
