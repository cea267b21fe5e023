# Cython twin of proto_reader.py: one ag_ui.Event payload -> event dict. The
# contract (protobuf merge semantics, UTF-8 policy, depth, the special shapes,
# warnings) is the module doc of proto_reader.py; tests/differential/test_proto_codec.py
# holds the two to the same dicts and the same errors.
#
# C strategy:
# * Each message is scanned once, forward: per field number (a spec says which
#   numbers and wire types it wants) the count and the last occurrence are
#   kept in a small array on the C stack; then its JSON keys are built in spec
#   order from those. The rare cases re-walk the message: repeated fields and
#   overwritten strings (every occurrence is UTF-8-validated).
# * A message body is a list of spans of the one payload buffer, as in
#   proto_reader: one span, or one per occurrence when a singular message field
#   occurs again (protobuf merge). Each span is scanned on its own (no field
#   straddles two occurrences) and nothing is copied, so a chain of merges
#   stays linear in time and memory. A merged JSON container keeps its spans in
#   its frame.
# * Dicts get interned key constants; enum-like strings ("TEXT_MESSAGE_CONTENT",
#   "text", "add", ...) are shared constants; strings come from
#   PyUnicode_DecodeUTF8 with "strict" or "replace", and a string field reuses
#   its previous value when the bytes repeat (ids do, event after event).
# * JSON values (google.protobuf.Value/Struct/ListValue) are rebuilt with an
#   explicit frame stack, so max_depth up to 10000 costs no C stack. A Value
#   whose kind is replaced by a later one still has the replaced struct/list
#   validated: it is pushed as a frame without a target.
# * Errors: the walk is proto_reader's, step for step (fields in the same order,
#   JSON containers on the same frame stack), so the first fault met here is
#   the one proto_reader meets. Where it is met, the fault is recorded in the
#   state (_DeFault: a code and the offsets that locate it) and NULL returns;
#   the entry point then has proto_reader.fault_error word the error from those
#   offsets (each error text exists once, in proto_reader). No failing payload
#   is decoded twice, so refusing costs what accepting costs (issue 15); a depth
#   fault is decoded once more here at MAX_DEPTH_LIMIT, since another fault wins
#   over the limit. Only what records no fault (memory, odd input types) is
#   decoded again by proto_reader (counted: _decoder_fallbacks).
# * Warnings (UnknownPartWarning) are collected and issued after a successful
#   decode, in proto_reader's order (which collects them too).
# * No Python code runs on the success path except the deferred warnings; the
#   input buffer is held with a buffer export, so it cannot move under us.

cimport cython
from cpython.buffer cimport PyBUF_SIMPLE
from libc.math cimport fabs, floor, isfinite, signbit
from libc.stdint cimport uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy

import sys as _de_sys
import warnings as _de_warnings

from agui_wire._codec import proto_reader as _de_py
from agui_wire import schema as _de_schema
from agui_wire.errors import UnknownPartWarning as _de_UnknownPartWarning

ctypedef const unsigned char* _de_ptr

cdef enum:
    _DE_MAXF = 32
    _DE_MAXNUM = 64         # field numbers 0..63 are tracked (a uint64 mask of seen fields)
    _DE_MAXSPEC = 64
    _DE_KEEP_FRAMES = 4096  # frame stack kept between calls
    _DE_CACHE_MAX = 64      # longest string a field keeps for reuse

# google.protobuf.Value / Struct / ListValue field numbers: compile-time constants
# for the JSON walk's hot loops, held to agui_wire.schema by _de_init (ImportError
# if they differ). A Value kind field number doubles as the kind of a container.
cdef enum:
    _DV_NULL = 1
    _DV_NUMBER = 2
    _DV_STRING = 3
    _DV_BOOL = 4
    _DV_STRUCT = 5
    _DV_LIST = 6
    _DV_MAX = 7             # Value kind numbers are below this
    _DV_FIELDS = 1          # Struct.fields (map entries)
    _DV_KEY = 1             # map entry key
    _DV_VALUE = 2           # map entry value
    _DV_VALUES = 1          # ListValue.values

# how a message is built beyond its 1:1 fields
cdef enum:
    _DS_PLAIN = 0
    _DS_CHAT = 1            # Message: `content` from field 3, 8 or 13 by role
    _DS_PART = 2            # InputContent: oneof arm -> {"type": ..., ...}
    _DS_SOURCE = 3          # InputContentSource: the same
    _DE_RUN_FINISHED = 11
    _DE_SUBAGENT_FINISHED = 12
    _DE_TOOL_CALL_RESULT = 13

ctypedef struct _DeField:
    PyObject* key           # JSON key (interned; owned by _de_keep)
    PyObject* dflt          # value when absent on the wire, NULL when the key is left out
    PyObject* last          # STRING: the last short ASCII value decoded here (owned), reused
                            # when the next one has the same bytes (ids repeat event to event)
    int number
    int kind                # schema.Kind
    int sub                 # spec id for Kind.MESSAGE
    bint repeated
    bint omit_empty

ctypedef struct _DeSpec:
    int nfields
    _DeField fields[_DE_MAXF]   # ascending field number
    int maxnum
    signed char wanted[_DE_MAXNUM]  # wire type recorded per number, -1: skipped
    int special
    int source                  # parts: the number of their `source` field (0: none)
    PyObject* type_name         # parts/sources/events: the JSON "type"
    PyObject* warning           # parts: the warning for an unknown source
    long type_value             # events: BaseEvent.type it must declare

ctypedef struct _DeOcc:         # a field's occurrences with the wanted wire type
    Py_ssize_t count
    uint64_t v                  # the last varint
    _de_ptr s                   # the last length-delimited / fixed body
    _de_ptr e

ctypedef struct _DeRange:       # bytes of the payload
    _de_ptr s
    _de_ptr e

ctypedef struct _DeBody:        # a message body: its occurrences, merged in order
    const _DeRange* spans       # (one span unless a singular field occurred again)
    Py_ssize_t n

ctypedef struct _DeIter:        # walks the fields of a body across its spans
    const _DeRange* spans
    Py_ssize_t n
    Py_ssize_t i
    _de_ptr p
    _de_ptr end

ctypedef struct _DeFrame:       # an open JSON container being filled
    PyObject* target            # dict/list (owned); NULL: only validating
    _DeRange* more              # owned spans of a merged container, or NULL
    Py_ssize_t nmore            # ... how many, and the next one to read
    Py_ssize_t imore
    _de_ptr p                   # the span being read
    _de_ptr end
    int kind                    # _DV_STRUCT or _DV_LIST
    long level                  # its nesting level (root = 1)

ctypedef struct _DeHead:        # what a Value holds
    int kind                    # 0 no kind, 1 scalar in obj, _DV_STRUCT/_DV_LIST a container
    PyObject* obj
    _de_ptr s                   # the container's body: one span ...
    _de_ptr e
    _DeRange* more              # ... or several (owned), merged
    Py_ssize_t nmore

ctypedef struct _DeSpan:        # one kind occurrence of a Value
    int number
    uint64_t v
    _de_ptr s
    _de_ptr e
    _de_ptr at                  # its tag

ctypedef struct _DeFault:        # where the first fault is (codes: proto_reader.FAULT_*)
    int code                    # 0: none recorded
    _de_ptr at                  # the field / string / container it is in
    _de_ptr end                 # the end of that field's message, or of the string
    _de_ptr pos                 # GROUP: the step inside the group that is refused
    uint64_t a                  # GROUP: group number; ONEOF: arm bit mask; NO_BASE/TYPE: arm
    uint64_t b                  # GROUP: innermost open group; ONEOF: which oneof; TYPE: declared
    _de_ptr p1                  # CONTENT: string content, content parts, activity (NULL: absent)
    _de_ptr p2
    _de_ptr p3
    PyObject* role              # CONTENT: the message's role (owned)

ctypedef struct _DeState:
    const char* errors          # NULL (strict) or "replace"
    long max_depth
    _de_ptr base                # the payload's first byte: offsets in faults count from here
    _DeFault fault
    _DeFrame* frames
    Py_ssize_t nframes
    Py_ssize_t cap
    PyObject* warns             # list of deferred warning texts, or NULL

cdef _DeSpec _de_specs[_DE_MAXSPEC]
cdef _DeSpec _de_events[_DE_MAXNUM]     # by Event arm number
cdef _DeSpec _de_base           # BaseEvent
cdef _DeSpec _de_envelope       # Event: its arms
cdef int _de_part_arm[_DE_MAXNUM]       # InputContent arm -> spec id
cdef int _de_source_arm[_DE_MAXNUM]     # InputContentSource arm -> spec id
# wire numbers of the special shapes (agui_wire.schema, at import)
cdef int _DE_N_BASE, _DE_N_TYPE         # the arm's base_event, BaseEvent.type
cdef int _DE_N_TEXT, _DE_N_PARTS, _DE_N_MAP     # Message content carriers
cdef int _DE_N_TR_TEXT, _DE_N_TR_PARTS          # TOOL_CALL_RESULT content carriers
cdef int _DE_N_RUN_OUTCOME, _DE_N_RUN_IDS, _DE_N_RUN_INTERRUPTS
cdef int _DE_N_SUB_OUTCOME, _DE_N_SUB_IDS
cdef int _de_interrupt_id
cdef int _de_part_union = 0     # spec id of InputContent
cdef int _de_source_union = 0   # spec id of InputContentSource
cdef signed char _DE_VWT[_DV_MAX]   # Value kind field -> its wire type

cdef list _de_keep = []
cdef object _de_absent_obj = object()
cdef PyObject* _DE_ABSENT = <PyObject*>_de_absent_obj
cdef object _de_empty = ""
cdef PyObject* _DE_EMPTY = <PyObject*>_de_empty
cdef PyObject* _de_ops[8]       # patch op names by enum value
cdef int _de_nops = 0
cdef PyObject* _DE_K_CONTENT
cdef PyObject* _DE_K_ROLE
cdef PyObject* _DE_K_SOURCE
cdef PyObject* _DE_K_TYPE
cdef PyObject* _DE_K_OUTCOME
cdef PyObject* _DE_K_PENDING
cdef PyObject* _DE_K_INTERRUPTS
cdef PyObject* _DE_K_INTERRUPT_IDS
cdef PyObject* _DE_W_UNKNOWN_PART
cdef dict _de_roles = {}        # known role -> 1 (content parts) | 2 (activity map)

cdef _DeState _de_main
cdef bint _de_main_busy = False
cdef unsigned long long _de_fallbacks = 0

# proto_reader's fault codes
cdef long _DE_MAX_DEPTH = _de_schema.MAX_DEPTH_LIMIT
cdef int _DF_WIRE = _de_py.FAULT_WIRE
cdef int _DF_GROUP = _de_py.FAULT_GROUP
cdef int _DF_UTF8 = _de_py.FAULT_UTF8
cdef int _DF_DEPTH = _de_py.FAULT_DEPTH
cdef int _DF_EMPTY = _de_py.FAULT_EMPTY
cdef int _DF_ONEOF = _de_py.FAULT_ONEOF
cdef int _DF_NO_ARM = _de_py.FAULT_NO_ARM
cdef int _DF_NO_BASE = _de_py.FAULT_NO_BASE
cdef int _DF_TYPE = _de_py.FAULT_TYPE
cdef int _DF_CONTENT = _de_py.FAULT_CONTENT
cdef int _DF_TOOL_RESULT = _de_py.FAULT_TOOL_RESULT

# A group refused by _de_group, for the caller to record: set and read within one
# C call chain (no Python code runs in between), cleared when read.
cdef _de_ptr _de_g_at = NULL     # the group's start tag (NULL: no group refused)
cdef _de_ptr _de_g_pos = NULL    # the step refused
cdef uint64_t _de_g_number = 0
cdef uint64_t _de_g_top = 0


# -- wire level ----------------------------------------------------------------------

cdef inline int _de_varint(_de_ptr* pp, _de_ptr end, uint64_t* out) noexcept:
    # proto_reader.varint: at most 10 bytes, the 10th 0 or 1
    cdef _de_ptr p = pp[0]
    cdef uint64_t result = 0, b
    cdef int shift = 0
    if p < end and p[0] < 0x80:
        out[0] = p[0]
        pp[0] = p + 1
        return 0
    while True:
        if p >= end:
            return -1
        b = p[0]
        p += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            if shift == 63 and b > 1:
                return -1
            break
        shift += 7
        if shift > 63:
            return -1
    out[0] = result
    pp[0] = p
    return 0


cdef int _de_group(uint64_t number, _de_ptr* pp, _de_ptr end) noexcept:
    # Skip a group after its start tag, validated as proto_reader.skip_group.
    global _de_g_pos, _de_g_number, _de_g_top
    cdef uint64_t small[16]
    cdef uint64_t* stack = small
    cdef uint64_t* mem
    cdef Py_ssize_t depth = 1, cap = 16
    cdef uint64_t tag, n, v
    cdef int wt, ok = -1
    cdef _de_ptr p = pp[0]
    cdef _de_ptr step = p
    stack[0] = number
    while depth:
        step = p
        if p >= end or _de_varint(&p, end, &tag) < 0 or tag > AGW_U32_MAX:
            break
        n = tag >> 3
        wt = tag & 7
        if n == 0:
            break
        if wt == 0:
            if _de_varint(&p, end, &v) < 0:
                break
        elif wt == 1:
            if end - p < 8:
                break
            p += 8
        elif wt == 2:
            if _de_varint(&p, end, &v) < 0 or v > <uint64_t>(end - p):
                break
            p += v
        elif wt == 5:
            if end - p < 4:
                break
            p += 4
        elif wt == 3:
            if depth == cap:
                mem = <uint64_t*>malloc(<size_t>(cap * 2) * sizeof(uint64_t))
                if mem == NULL:
                    step = NULL         # not a fault of the bytes
                    break
                memcpy(mem, stack, <size_t>cap * sizeof(uint64_t))
                if stack != small:
                    free(stack)
                stack = mem
                cap *= 2
            stack[depth] = n
            depth += 1
        elif wt == 4:
            depth -= 1
            if stack[depth] != n:
                depth += 1      # the innermost open group is the one it fails to close
                break
        else:
            break
    else:
        ok = 0
        pp[0] = p
    if ok < 0:
        _de_g_pos = step
        _de_g_number = number
        _de_g_top = stack[depth - 1]
    if stack != small:
        free(stack)
    return ok


cdef void _de_note_group(_de_ptr at) noexcept:
    global _de_g_at
    _de_g_at = at


cdef void _de_fault(_DeState* d, int code, _de_ptr at, _de_ptr end) noexcept:
    # Record the first fault (what fails after it only unwinds).
    if d.fault.code == 0:
        d.fault.code = code
        d.fault.at = at
        d.fault.end = end


cdef void _de_wire_fault(_DeState* d, _de_ptr at, _de_ptr end) noexcept:
    # The field at `at` (its message ends at `end`) does not parse.
    global _de_g_at
    if d.fault.code != 0:
        return
    if _de_g_at == at:
        _de_g_at = NULL
        if _de_g_pos == NULL:
            return              # memory, not the bytes
        _de_fault(d, _DF_GROUP, at, end)
        d.fault.pos = _de_g_pos
        d.fault.a = _de_g_number
        d.fault.b = _de_g_top
        return
    _de_fault(d, _DF_WIRE, at, end)


cdef inline int _de_field(
    _de_ptr* pp, _de_ptr end, uint64_t* number, int* wt, uint64_t* val, _de_ptr* s, _de_ptr* e
) noexcept:
    """One field at pp, checked as proto_reader.scan checks it."""
    cdef _de_ptr p = pp[0]
    cdef uint64_t tag, n
    cdef int w
    if _de_varint(&p, end, &tag) < 0 or tag > AGW_U32_MAX:
        return -1
    n = tag >> 3
    w = tag & 7
    if n == 0:
        return -1
    if w == 0:
        if _de_varint(&p, end, val) < 0:
            return -1
    elif w == 2:
        if _de_varint(&p, end, val) < 0 or val[0] > <uint64_t>(end - p):
            return -1
        s[0] = p
        p += val[0]
        e[0] = p
    elif w == 1:
        if end - p < 8:
            return -1
        s[0] = p
        p += 8
        e[0] = p
    elif w == 5:
        if end - p < 4:
            return -1
        p += 4
    elif w == 3:
        if _de_group(n, &p, end) < 0:
            _de_note_group(pp[0])
            return -1
    else:
        return -1
    pp[0] = p
    number[0] = n
    wt[0] = w
    return 0


cdef int _de_scan(_DeState* d, _DeBody body, _DeSpec* sp, _DeOcc* occ, uint64_t* seen) noexcept:
    """Walk a message, span by span (each must be well-formed on its own, as upb
    parses each occurrence); per wanted field number, count the occurrences and
    keep the last."""
    cdef uint64_t n, v = 0, mask = 0
    cdef int wt
    cdef _de_ptr s = NULL
    cdef _de_ptr e = NULL
    cdef _de_ptr p
    cdef _de_ptr end
    cdef _de_ptr at
    cdef _DeOcc* o
    cdef Py_ssize_t k
    for k in range(body.n):
        p = body.spans[k].s
        end = body.spans[k].e
        while p < end:
            if p[0] < 0x80 and p[0] >= 8 and (p[0] & 7) == 2 and end - p >= 2 and p[1] < 0x80:
                # the usual field: one-byte tag, length-delimited, one-byte length
                n = p[0] >> 3
                wt = 2
                v = p[1]
                if v > <uint64_t>(end - p - 2):
                    _de_wire_fault(d, p, end)
                    return -1
                s = p + 2
                e = s + v
                p = e
            else:
                at = p
                if _de_field(&p, end, &n, &wt, &v, &s, &e) < 0:
                    _de_wire_fault(d, at, end)
                    return -1
            if n <= <uint64_t>sp.maxnum and sp.wanted[n] == wt:
                o = &occ[n]
                if (mask >> n) & 1:
                    o.count += 1
                else:
                    mask |= (<uint64_t>1) << n
                    o.count = 1
                o.v = v
                o.s = s
                o.e = e
    seen[0] = mask
    return 0


cdef inline _DeBody _de_one(_DeRange* r, _de_ptr s, _de_ptr e) noexcept:
    # A body of one span, held in r.
    cdef _DeBody b
    r.s = s
    r.e = e
    b.spans = r
    b.n = 1
    return b


cdef inline void _de_iter(_DeIter* it, _DeBody body) noexcept:
    it.spans = body.spans
    it.n = body.n
    it.i = 0
    it.p = body.spans[0].s if body.n else NULL
    it.end = body.spans[0].e if body.n else NULL


cdef inline bint _de_next(_DeIter* it, uint64_t number, _de_ptr* s, _de_ptr* e) noexcept:
    # The next length-delimited occurrence of `number` in a body already scanned.
    cdef uint64_t n, v
    cdef int wt
    while True:
        while it.p < it.end:
            if _de_field(&it.p, it.end, &n, &wt, &v, s, e) < 0:
                return False
            if n == number and wt == 2:
                return True
        it.i += 1
        if it.i >= it.n:
            return False
        it.p = it.spans[it.i].s
        it.end = it.spans[it.i].e


cdef int _de_take(_DeOcc* o, _DeBody body, uint64_t number, _DeRange* one, _DeBody* sub,
                  _DeRange** owned) noexcept:
    """The body of a singular message field: its only occurrence, or all of them
    merged (a span each, in wire order: nothing is copied). A merged body's span
    array is returned in `owned`, for the caller to free."""
    cdef _DeIter it
    cdef Py_ssize_t j = 0
    cdef _de_ptr s = NULL
    cdef _de_ptr e = NULL
    owned[0] = NULL
    if o.count == 1:
        sub[0] = _de_one(one, o.s, o.e)
        return 0
    owned[0] = <_DeRange*>malloc(<size_t>o.count * sizeof(_DeRange))
    if owned[0] == NULL:
        return -1
    _de_iter(&it, body)
    while j < o.count and _de_next(&it, number, &s, &e):
        owned[0][j].s = s
        owned[0][j].e = e
        j += 1
    if j != o.count:
        free(owned[0])
        owned[0] = NULL
        return -1
    sub.spans = owned[0]
    sub.n = j
    return 0


cdef _de_ptr _de_tag_of(_DeBody body, uint64_t number, int want, bint last) noexcept:
    """Where the first (or last) field `number` with wire type `want` starts in a
    body already scanned; NULL if there is none. Only errors ask."""
    cdef _de_ptr p
    cdef _de_ptr end
    cdef _de_ptr at
    cdef _de_ptr found = NULL
    cdef _de_ptr s = NULL
    cdef _de_ptr e = NULL
    cdef uint64_t n, v
    cdef int wt
    cdef Py_ssize_t k
    for k in range(body.n):
        p = body.spans[k].s
        end = body.spans[k].e
        while p < end:
            at = p
            if _de_field(&p, end, &n, &wt, &v, &s, &e) < 0:
                return found
            if n == number and wt == want:
                if not last:
                    return at
                found = at
    return found


cdef void _de_two_arms(_DeState* d, int which, uint64_t seen, _DeBody body) noexcept:
    # proto_reader.two_arms: located at the second lowest arm
    _de_fault(d, _DF_ONEOF, _de_tag_of(body, agw_ctz64(seen & (seen - 1)), 2, False), NULL)
    d.fault.a = seen
    d.fault.b = which


cdef inline PyObject* _de_text(_DeState* d, _de_ptr s, _de_ptr e) noexcept:
    cdef PyObject* t = capi.PyUnicode_DecodeUTF8(<const char*>s, e - s, d.errors)
    if t == NULL and capi.PyErr_ExceptionMatches(capi.PyExc_UnicodeDecodeError):
        _de_fault(d, _DF_UTF8, s, e)
    return t


cdef PyObject* _de_last_text(_DeState* d, _DeOcc* o, _DeBody body, uint64_t number) noexcept:
    """The last occurrence wins, every one must be valid UTF-8 (proto_reader.last_text)."""
    cdef _DeIter it
    cdef _de_ptr s = NULL
    cdef _de_ptr e = NULL
    cdef Py_ssize_t j = 0
    cdef PyObject* t
    if o.count > 1:
        _de_iter(&it, body)
        while j < o.count - 1 and _de_next(&it, number, &s, &e):
            t = _de_text(d, s, e)
            if t == NULL:
                return NULL
            capi.Py_DECREF(t)
            j += 1
    return _de_text(d, o.s, o.e)


cdef inline PyObject* _de_cached_text(_DeState* d, _DeField* f, _de_ptr s, _de_ptr e) noexcept:
    # A str is immutable: the same bytes may as well give the same object.
    cdef Py_ssize_t n = e - s
    cdef PyObject* v
    if n > _DE_CACHE_MAX:
        return _de_text(d, s, e)
    v = f.last
    if v != NULL and agw_str_eq_ascii(v, <const char*>s, n):
        capi.Py_INCREF(v)
        return v
    v = _de_text(d, s, e)
    if v != NULL and capi.PyUnicode_IS_COMPACT_ASCII(v):
        capi.Py_XDECREF(f.last)
        capi.Py_INCREF(v)
        f.last = v
    return v


cdef inline PyObject* _de_number(_de_ptr s) noexcept:
    # schema.number_from_double of a little-endian double
    cdef uint64_t bits = 0
    cdef double x
    cdef int i
    for i in range(8):
        bits |= (<uint64_t>s[i]) << (8 * i)
    memcpy(&x, &bits, 8)
    if isfinite(x) and floor(x) == x and fabs(x) <= AGW_MAX_EXACT_DOUBLE and not (x == 0.0 and signbit(x)):
        return capi.PyLong_FromLongLong(<long long>x)
    return capi.PyFloat_FromDouble(x)


cdef int _de_warn(_DeState* d, PyObject* text) noexcept:
    # Deferred: issued after a successful decode (see the module comment).
    if d.warns == NULL:
        d.warns = capi.PyList_New(0)
        if d.warns == NULL:
            return -1
    return capi.PyList_Append(d.warns, text)


# -- JSON values ---------------------------------------------------------------------

cdef int _de_push(_DeState* d, PyObject* target, int kind, _DeHead* h, long level) noexcept:
    """Open a container frame for h's body; steals `target` and h.more."""
    cdef Py_ssize_t cap
    cdef void* mem
    cdef _DeFrame* f
    if d.nframes == d.cap:
        cap = d.cap * 2 if d.cap else 64
        mem = realloc(d.frames, <size_t>cap * sizeof(_DeFrame))
        if mem == NULL:
            capi.Py_XDECREF(target)
            free(h.more)
            h.more = NULL
            return -1
        d.frames = <_DeFrame*>mem
        d.cap = cap
    f = &d.frames[d.nframes]
    d.nframes += 1
    f.target = target
    f.kind = kind
    f.level = level
    f.more = h.more
    if h.more != NULL:
        f.nmore = h.nmore
        f.p = h.more[0].s
        f.end = h.more[0].e
        f.imore = 1
    else:
        f.nmore = 0
        f.p = h.s
        f.end = h.e
        f.imore = 0
    h.more = NULL
    return 0


cdef void _de_unwind(_DeState* d, Py_ssize_t base) noexcept:
    cdef _DeFrame* f
    while d.nframes > base:
        d.nframes -= 1
        f = &d.frames[d.nframes]
        capi.Py_XDECREF(f.target)
        free(f.more)


cdef int _de_head_final(_DeState* d, int number, uint64_t v, _de_ptr s, _de_ptr e,
                        _DeHead* h) noexcept:
    h.more = NULL
    if number == _DV_STRUCT or number == _DV_LIST:
        h.kind = number
        h.s = s
        h.e = e
        return 0
    h.kind = 1
    if number == _DV_NULL:
        h.obj = capi.Py_None            # null_value, whatever its varint says
        capi.Py_INCREF(h.obj)
    elif number == _DV_NUMBER:
        h.obj = _de_number(s)
    elif number == _DV_STRING:
        h.obj = _de_text(d, s, e)
    else:                           # _DV_BOOL
        h.obj = capi.Py_True if v else capi.Py_False
        capi.Py_INCREF(h.obj)
    return 0 if h.obj != NULL else -1


cdef int _de_head_slow(_DeState* d, _DeBody body, long level, Py_ssize_t nk, _DeHead* h) noexcept:
    """A Value with several kind occurrences (proto_reader._Reader.head): the last
    kind wins, a trailing run of struct/list occurrences merges, and what is
    replaced is still validated (strings decoded, containers walked)."""
    cdef _DeSpan* spans = <_DeSpan*>malloc(<size_t>nk * sizeof(_DeSpan))
    cdef _de_ptr p
    cdef _de_ptr end
    cdef _de_ptr fs = NULL
    cdef _de_ptr fe = NULL
    cdef uint64_t n, v = 0
    cdef int wt, r = -1
    cdef Py_ssize_t k = 0, run, i, b
    cdef PyObject* t
    cdef _DeHead replaced
    cdef _de_ptr at
    if spans == NULL:
        return -1
    for b in range(body.n):
        p = body.spans[b].s
        end = body.spans[b].e
        while p < end and k < nk:
            at = p
            if _de_field(&p, end, &n, &wt, &v, &fs, &fe) < 0:
                break
            if 1 <= n < _DV_MAX and wt == _DE_VWT[n]:
                spans[k].number = <int>n
                spans[k].v = v
                spans[k].s = fs
                spans[k].e = fe
                spans[k].at = at
                k += 1
    if k != nk:
        free(spans)
        return -1
    run = nk - 1
    if spans[run].number == _DV_STRUCT or spans[run].number == _DV_LIST:
        while run > 0 and spans[run - 1].number == spans[nk - 1].number:
            run -= 1
    for i in range(run):
        if spans[i].number == _DV_STRING:
            t = _de_text(d, spans[i].s, spans[i].e)
            if t == NULL:
                free(spans)
                return -1
            capi.Py_DECREF(t)
        elif spans[i].number == _DV_STRUCT or spans[i].number == _DV_LIST:
            # replaced, still walked: a frame without a target
            if level + 1 > d.max_depth:
                _de_fault(d, _DF_DEPTH, spans[i].at, NULL)
                free(spans)
                return -1
            replaced.s = spans[i].s
            replaced.e = spans[i].e
            replaced.more = NULL
            if _de_push(d, NULL, spans[i].number, &replaced, level + 1) < 0:
                free(spans)
                return -1
    if run < nk - 1:
        h.kind = spans[nk - 1].number
        h.nmore = nk - run
        h.more = <_DeRange*>malloc(<size_t>h.nmore * sizeof(_DeRange))
        if h.more != NULL:
            for i in range(run, nk):
                h.more[i - run].s = spans[i].s
                h.more[i - run].e = spans[i].e
            r = 0
    else:
        r = _de_head_final(d, spans[nk - 1].number, spans[nk - 1].v, spans[nk - 1].s,
                           spans[nk - 1].e, h)
    free(spans)
    return r


cdef inline int _de_head(_DeState* d, _DeBody body, long level, _DeHead* h) noexcept:
    """The kind a google.protobuf.Value body holds, and its payload."""
    cdef _de_ptr p
    cdef _de_ptr end
    cdef _de_ptr fs = NULL
    cdef _de_ptr fe = NULL
    cdef _de_ptr ls = NULL
    cdef _de_ptr le = NULL
    cdef _de_ptr at
    cdef uint64_t n, v = 0, lv = 0
    cdef int wt, ln = 0
    cdef Py_ssize_t nk = 0, b
    for b in range(body.n):
        p = body.spans[b].s
        end = body.spans[b].e
        while p < end:
            at = p
            if _de_field(&p, end, &n, &wt, &v, &fs, &fe) < 0:
                _de_wire_fault(d, at, end)
                return -1
            if 1 <= n < _DV_MAX and wt == _DE_VWT[n]:
                nk += 1
                ln = <int>n
                lv = v
                ls = fs
                le = fe
    if nk == 0:
        h.kind = 0
        h.more = NULL
        return 0
    if nk > 1:
        return _de_head_slow(d, body, level, nk, h)
    return _de_head_final(d, ln, lv, ls, le, h)


cdef int _de_entry(_DeState* d, _de_ptr s, _de_ptr e, long level, PyObject** key,
                   _DeHead* h) noexcept:
    """A Struct map entry: its key (last wins, all validated) and the head of
    its value (occurrences merged)."""
    cdef _de_ptr p = s
    cdef _de_ptr fs = NULL
    cdef _de_ptr fe = NULL
    cdef _de_ptr ks = NULL
    cdef _de_ptr ke = NULL
    cdef _DeRange one           # the value, when it occurs once
    cdef _DeRange whole         # the entry, to walk it again
    cdef _DeRange* values = NULL
    cdef _DeBody body
    cdef _DeIter it
    cdef uint64_t n, v
    cdef int wt, r
    cdef Py_ssize_t nk = 0, nv = 0, j
    cdef PyObject* t
    cdef _de_ptr at
    while p < e:
        at = p
        if _de_field(&p, e, &n, &wt, &v, &fs, &fe) < 0:
            _de_wire_fault(d, at, e)
            return -1
        if wt == 2:
            if n == _DV_KEY:
                nk += 1
                ks = fs
                ke = fe
            elif n == _DV_VALUE:
                nv += 1
                one.s = fs
                one.e = fe
    if nk == 0:
        key[0] = _DE_EMPTY
        capi.Py_INCREF(_DE_EMPTY)
    else:
        if nk > 1:
            _de_iter(&it, _de_one(&whole, s, e))
            j = 0
            while j < nk - 1 and _de_next(&it, _DV_KEY, &fs, &fe):
                t = _de_text(d, fs, fe)
                if t == NULL:
                    return -1
                capi.Py_DECREF(t)
                j += 1
        key[0] = _de_text(d, ks, ke)
        if key[0] == NULL:
            return -1
    if nv == 0:
        h.kind = 0
        h.more = NULL
        return 0
    if nv == 1:
        body.spans = &one
        body.n = 1
        r = _de_head(d, body, level, h)
    else:
        # several value occurrences merge: a span each
        values = <_DeRange*>malloc(<size_t>nv * sizeof(_DeRange))
        r = -1
        if values != NULL:
            _de_iter(&it, _de_one(&whole, s, e))
            j = 0
            while j < nv and _de_next(&it, _DV_VALUE, &fs, &fe):
                values[j].s = fs
                values[j].e = fe
                j += 1
            if j == nv:
                body.spans = values
                body.n = nv
                r = _de_head(d, body, level, h)
            free(values)
    if r < 0:
        capi.Py_DECREF(key[0])
        key[0] = NULL
    return r


cdef int _de_run(_DeState* d, Py_ssize_t base) noexcept:
    """Fill the open containers down to `base` (proto_reader._Reader.run)."""
    cdef _DeFrame* f
    cdef _DeHead h
    cdef _DeRange one
    cdef PyObject* target
    cdef PyObject* key
    cdef PyObject* child
    cdef _de_ptr s = NULL
    cdef _de_ptr e = NULL
    cdef _de_ptr at
    cdef uint64_t n, v
    cdef int wt, kind, r
    cdef long level
    while d.nframes > base:
        f = &d.frames[d.nframes - 1]
        if f.p >= f.end:
            if f.imore < f.nmore:           # the next occurrence of a merged container
                f.p = f.more[f.imore].s
                f.end = f.more[f.imore].e
                f.imore += 1
                continue
            d.nframes -= 1
            capi.Py_XDECREF(f.target)
            free(f.more)
            continue
        at = f.p
        if _de_field(&f.p, f.end, &n, &wt, &v, &s, &e) < 0:
            _de_wire_fault(d, at, f.end)
            return -1
        kind = f.kind
        if wt != 2 or n != <uint64_t>(_DV_FIELDS if kind == _DV_STRUCT else _DV_VALUES):
            continue            # not an entry/element: unknown, skipped
        level = f.level
        target = f.target       # the frame keeps it alive while it is open
        key = NULL
        if kind == _DV_STRUCT:
            if _de_entry(d, s, e, level, &key, &h) < 0:
                return -1
        elif _de_head(d, _de_one(&one, s, e), level, &h) < 0:
            return -1
        # (f may have moved: _de_head may have pushed frames)
        # h.kind > 1: a container (0 is no kind, 1 a scalar; _de_init checks)
        if h.kind > 1 and level >= d.max_depth:
            _de_fault(d, _DF_DEPTH, at, NULL)     # a container nested deeper than max_depth
            capi.Py_XDECREF(key)
            free(h.more)
            return -1
        if target == NULL:
            capi.Py_XDECREF(key)
            if h.kind == 1:
                capi.Py_DECREF(h.obj)
            elif h.kind > 1 and _de_push(d, NULL, h.kind, &h, level + 1) < 0:
                return -1
            continue
        child = NULL
        if h.kind > 1:
            child = capi.PyDict_New() if h.kind == _DV_STRUCT else capi.PyList_New(0)
            if child == NULL:
                capi.Py_XDECREF(key)
                free(h.more)
                return -1
        if kind == _DV_STRUCT:
            if h.kind == 0:
                # a Value with no kind is undefined in JSON: the key goes
                r = capi.PyDict_Contains(target, key)
                if r > 0:
                    r = capi.PyDict_DelItem(target, key)
            elif h.kind == 1:
                r = capi.PyDict_SetItem(target, key, h.obj)
                capi.Py_DECREF(h.obj)
            else:
                r = capi.PyDict_SetItem(target, key, child)
            capi.Py_DECREF(key)
        elif h.kind == 0:
            r = capi.PyList_Append(target, capi.Py_None)
        elif h.kind == 1:
            r = capi.PyList_Append(target, h.obj)
            capi.Py_DECREF(h.obj)
        else:
            r = capi.PyList_Append(target, child)
        if r < 0:
            capi.Py_XDECREF(child)
            if h.kind > 1:
                free(h.more)
            return -1
        if child != NULL and _de_push(d, child, h.kind, &h, level + 1) < 0:
            return -1
    return 0


cdef PyObject* _de_value(_DeState* d, _DeBody body) noexcept:
    """A google.protobuf.Value as JSON; _DE_ABSENT when it has no kind."""
    cdef Py_ssize_t base = d.nframes
    cdef _DeHead h
    cdef PyObject* r
    if _de_head(d, body, 0, &h) < 0:
        _de_unwind(d, base)
        return NULL
    if h.kind == 0:
        r = _DE_ABSENT
        capi.Py_INCREF(r)
    elif h.kind == 1:
        r = h.obj
    else:
        r = capi.PyDict_New() if h.kind == _DV_STRUCT else capi.PyList_New(0)
        if r == NULL:
            free(h.more)
            _de_unwind(d, base)
            return NULL
        capi.Py_INCREF(r)
        if _de_push(d, r, h.kind, &h, 1) < 0:
            capi.Py_DECREF(r)
            _de_unwind(d, base)
            return NULL
    if _de_run(d, base) < 0:
        capi.Py_DECREF(r)
        _de_unwind(d, base)
        return NULL
    return r


cdef PyObject* _de_struct(_DeState* d, _DeBody body) noexcept:
    """A google.protobuf.Struct as a dict."""
    cdef Py_ssize_t base = d.nframes, i
    cdef PyObject* r = capi.PyDict_New()
    cdef _DeHead h
    if r == NULL:
        return NULL
    h.more = NULL
    h.nmore = 0
    if body.n == 1:
        h.s = body.spans[0].s
        h.e = body.spans[0].e
    else:
        # the frame owns its spans
        h.nmore = body.n
        h.more = <_DeRange*>malloc(<size_t>body.n * sizeof(_DeRange))
        if h.more == NULL:
            capi.Py_DECREF(r)
            return NULL
        for i in range(body.n):
            h.more[i] = body.spans[i]
    capi.Py_INCREF(r)
    if _de_push(d, r, _DV_STRUCT, &h, 1) < 0:
        capi.Py_DECREF(r)
        return NULL
    if _de_run(d, base) < 0:
        capi.Py_DECREF(r)
        _de_unwind(d, base)
        return NULL
    return r


# -- messages ------------------------------------------------------------------------

cdef PyObject* _de_item(_DeState* d, _DeField* f, _de_ptr s, _de_ptr e) noexcept:
    # One element of a repeated field.
    cdef _DeRange one
    if f.kind == _K_STRING:
        return _de_text(d, s, e)
    return _de_message(d, f.sub, _de_one(&one, s, e))


cdef PyObject* _de_field_value(_DeState* d, _DeField* f, _DeOcc* o, _DeBody body) noexcept:
    """A present field's JSON value (proto_reader.field_value)."""
    cdef PyObject* r
    cdef PyObject* item
    cdef _DeIter it
    cdef _DeRange one
    cdef _DeRange* owned = NULL
    cdef _DeBody sub
    cdef _de_ptr s = NULL
    cdef _de_ptr e = NULL
    cdef Py_ssize_t j = 0
    cdef int v32
    if f.repeated:
        r = capi.PyList_New(o.count)
        if r == NULL:
            return NULL
        if o.count == 1:
            item = _de_item(d, f, o.s, o.e)
            if item == NULL:
                capi.Py_DECREF(r)
                return NULL
            capi.PyList_SET_ITEM(r, 0, item)
            return r
        _de_iter(&it, body)
        while j < o.count and _de_next(&it, f.number, &s, &e):
            item = _de_item(d, f, s, e)
            if item == NULL:
                capi.Py_DECREF(r)
                return NULL
            capi.PyList_SET_ITEM(r, j, item)
            j += 1
        if j != o.count:
            capi.Py_DECREF(r)
            return NULL
        return r
    if f.kind == _K_STRING:
        return _de_last_text(d, o, body, f.number)
    if f.kind == _K_INT64:
        return capi.PyLong_FromLongLong(<long long>o.v)
    if f.kind == _K_BOOL:
        r = capi.Py_True if o.v else capi.Py_False
        capi.Py_INCREF(r)
        return r
    if f.kind == _K_PATCH_OP:  # an int32 enum
        v32 = <int>(<uint32_t>o.v)
        if 0 <= v32 < _de_nops:
            capi.Py_INCREF(_de_ops[v32])
            return _de_ops[v32]
        return _de_op_text(v32)
    if _de_take(o, body, f.number, &one, &sub, &owned) < 0:
        return NULL
    if f.kind == _K_VALUE:
        r = _de_value(d, sub)
    elif f.kind == _K_STRUCT:
        r = _de_struct(d, sub)
    else:
        r = _de_message(d, f.sub, sub)
    free(owned)
    return r


cdef PyObject* _de_op_text(int v) noexcept:
    # An op number this version does not name: its decimal text, as str(v).
    cdef object text
    try:
        text = str(v)
    except BaseException:
        return NULL
    capi.Py_INCREF(<PyObject*>text)
    return <PyObject*>text


cdef int _de_put(_DeState* d, _DeSpec* sp, _DeOcc* occ, uint64_t seen, _DeBody body,
                 PyObject* out) noexcept:
    """Set the 1:1 JSON keys of `sp` (proto_reader.put_fields)."""
    cdef int i, r
    cdef _DeField* f
    cdef PyObject* v
    for i in range(sp.nfields):
        f = &sp.fields[i]
        if not (seen >> f.number) & 1:
            if f.repeated:
                if not f.omit_empty:
                    v = capi.PyList_New(0)
                    if v == NULL:
                        return -1
                    r = capi.PyDict_SetItem(out, f.key, v)
                    capi.Py_DECREF(v)
                    if r < 0:
                        return -1
            elif f.dflt != NULL and capi.PyDict_SetItem(out, f.key, f.dflt) < 0:
                return -1
            continue
        if f.kind == _K_STRING and not f.repeated and occ[f.number].count == 1:
            v = _de_cached_text(d, f, occ[f.number].s, occ[f.number].e)    # the common case
        else:
            v = _de_field_value(d, f, &occ[f.number], body)
        if v == NULL:
            return -1
        if v != _DE_ABSENT:
            r = capi.PyDict_SetItem(out, f.key, v)
        else:
            r = 0
        capi.Py_DECREF(v)
        if r < 0:
            return -1
    return 0


cdef PyObject* _de_variant(_DeState* d, _DeSpec* union, int* arms, _DeBody body,
                           bint part) noexcept:
    """A oneof shown as a JSON union on "type": a content part or a source."""
    cdef _DeOcc occ[_DE_MAXNUM]
    cdef _DeOcc inner[_DE_MAXNUM]
    cdef uint64_t seen, iseen
    cdef int arm
    cdef _DeSpec* sp
    cdef _DeRange one
    cdef _DeRange* owned = NULL
    cdef _DeBody sub
    cdef PyObject* out = NULL
    if _de_scan(d, body, union, occ, &seen) < 0:
        return NULL
    if agw_popcount64(seen) > 1:
        _de_two_arms(d, 1 if part else 2, seen, body)
        return NULL
    if seen == 0:
        if part and _de_warn(d, _DE_W_UNKNOWN_PART) < 0:
            return NULL
        capi.Py_INCREF(_DE_ABSENT)
        return _DE_ABSENT
    arm = agw_ctz64(seen)
    sp = &_de_specs[arms[arm]]
    if _de_take(&occ[arm], body, arm, &one, &sub, &owned) < 0:
        return NULL
    if _de_scan(d, sub, sp, inner, &iseen) < 0:
        free(owned)
        return NULL
    out = capi.PyDict_New()
    if out == NULL or capi.PyDict_SetItem(out, _DE_K_TYPE, sp.type_name) < 0 \
            or _de_put(d, sp, inner, iseen, sub, out) < 0:
        capi.Py_XDECREF(out)
        free(owned)
        return NULL
    free(owned)
    if part and sp.source and (iseen >> sp.source) & 1 and capi.PyDict_Contains(out, _DE_K_SOURCE) == 0:
        # the source names no kind this version knows: the part is dropped
        capi.Py_DECREF(out)
        if _de_warn(d, sp.warning) < 0:
            return NULL
        capi.Py_INCREF(_DE_ABSENT)
        return _DE_ABSENT
    return out


cdef PyObject* _de_parts(_DeState* d, _DeOcc* o, bint present, _DeBody body,
                         uint64_t number) noexcept:
    """Repeated InputContent as a list; parts of unknown kinds are dropped."""
    cdef PyObject* lst = capi.PyList_New(0)
    cdef PyObject* item
    cdef _DeIter it
    cdef _DeRange one
    cdef _de_ptr s = NULL
    cdef _de_ptr e = NULL
    cdef bint first = True
    if lst == NULL or not present:
        return lst
    _de_iter(&it, body)
    while True:
        if o.count == 1:
            if not first:
                break
            s = o.s
            e = o.e
            first = False
        elif not _de_next(&it, number, &s, &e):
            break
        item = _de_variant(d, &_de_specs[_de_part_union], _de_part_arm, _de_one(&one, s, e), True)
        if item == NULL:
            capi.Py_DECREF(lst)
            return NULL
        if item != _DE_ABSENT and capi.PyList_Append(lst, item) < 0:
            capi.Py_DECREF(item)
            capi.Py_DECREF(lst)
            return NULL
        capi.Py_DECREF(item)
    return lst


cdef int _de_set(PyObject* out, PyObject* key, PyObject* v) noexcept:
    # Set and release `v` (NULL: an error upstream).
    cdef int r
    if v == NULL:
        return -1
    r = capi.PyDict_SetItem(out, key, v)
    capi.Py_DECREF(v)
    return r


cdef int _de_content_fault(_DeState* d, PyObject* role, _DeBody body) noexcept:
    # proto_reader.content_forms words it, from where each content form starts
    if d.fault.code == 0:
        _de_fault(d, _DF_CONTENT, NULL, NULL)
        d.fault.p1 = _de_tag_of(body, _DE_N_TEXT, 2, False)
        d.fault.p2 = _de_tag_of(body, _DE_N_PARTS, 2, False)
        d.fault.p3 = _de_tag_of(body, _DE_N_MAP, 2, False)
        capi.Py_INCREF(role)
        d.fault.role = role
    return -1


cdef int _de_chat(_DeState* d, _DeOcc* occ, uint64_t seen, _DeBody body, PyObject* out) noexcept:
    """Message `content` from the carrier the role says (proto_reader.chat_message)."""
    cdef bint text = (seen >> _DE_N_TEXT) & 1
    cdef bint parts = (seen >> _DE_N_PARTS) & 1
    cdef bint act = (seen >> _DE_N_MAP) & 1
    cdef bint uses_parts, uses_map
    cdef PyObject* role = capi.PyDict_GetItemWithError(out, _DE_K_ROLE)
    cdef PyObject* known
    cdef _DeRange one
    cdef _DeRange* owned = NULL
    cdef _DeBody sub
    cdef long flags
    cdef int r
    if role == NULL:
        return -1
    known = capi.PyDict_GetItemWithError(<PyObject*>_de_roles, role)
    if known != NULL:
        flags = capi.PyLong_AsLong(known)
        uses_parts = flags & 1
        uses_map = (flags & 2) != 0
        if (parts and not uses_parts) or (act and not uses_map) or (uses_map and text) \
                or (uses_parts and text and parts):
            return _de_content_fault(d, role, body)
    else:
        if <int>text + <int>parts + <int>act > 1:
            return _de_content_fault(d, role, body)
        uses_parts = parts
        uses_map = not uses_parts and act
    if text:
        return _de_set(out, _DE_K_CONTENT, _de_last_text(d, &occ[_DE_N_TEXT], body, _DE_N_TEXT))
    if uses_parts:
        return _de_set(
            out, _DE_K_CONTENT, _de_parts(d, &occ[_DE_N_PARTS], parts, body, _DE_N_PARTS)
        )
    if uses_map and act:
        if _de_take(&occ[_DE_N_MAP], body, _DE_N_MAP, &one, &sub, &owned) < 0:
            return -1
        r = _de_set(out, _DE_K_CONTENT, _de_struct(d, sub))
        free(owned)
        return r
    return 0


cdef PyObject* _de_message(_DeState* d, int idx, _DeBody body) noexcept:
    """A nested message as JSON, or _DE_ABSENT when JSON drops it."""
    cdef _DeSpec* sp = &_de_specs[idx]
    cdef _DeOcc occ[_DE_MAXNUM]
    cdef uint64_t seen
    cdef PyObject* out
    if sp.special == _DS_PART:
        return _de_variant(d, sp, _de_part_arm, body, True)
    if sp.special == _DS_SOURCE:
        return _de_variant(d, sp, _de_source_arm, body, False)
    if _de_scan(d, body, sp, occ, &seen) < 0:
        return NULL
    out = capi.PyDict_New()
    if out == NULL:
        return NULL
    if _de_put(d, sp, occ, seen, body, out) < 0 \
            or (sp.special == _DS_CHAT and _de_chat(d, occ, seen, body, out) < 0):
        capi.Py_DECREF(out)
        return NULL
    return out


# -- the event -----------------------------------------------------------------------

cdef PyObject* _de_texts(_DeState* d, _DeOcc* o, bint present, _DeBody body, uint64_t number,
                         bint messages) noexcept:
    # Every occurrence of a repeated string (or Interrupt) field, as a list.
    cdef PyObject* lst
    cdef PyObject* item
    cdef _DeIter it
    cdef _DeRange one
    cdef _de_ptr s = NULL
    cdef _de_ptr e = NULL
    cdef Py_ssize_t j = 0
    if not present:
        return capi.PyList_New(0)
    lst = capi.PyList_New(o.count)
    if lst == NULL:
        return NULL
    _de_iter(&it, body)
    while j < o.count and _de_next(&it, number, &s, &e):
        if messages:
            item = _de_message(d, _de_interrupt_id, _de_one(&one, s, e))
        else:
            item = _de_text(d, s, e)
        if item == NULL:
            break
        capi.PyList_SET_ITEM(lst, j, item)
        j += 1
    if j != o.count:
        capi.Py_DECREF(lst)
        return NULL
    return lst


cdef int _de_outcome(_DeState* d, _DeOcc* occ, uint64_t seen, _DeBody body, PyObject* out,
                     int number, int ids_number, int interrupts_number) noexcept:
    """RUN_FINISHED / SUBAGENT_FINISHED: the outcome string and its payload lists
    back into the `outcome` object; without an outcome the lists stay top-level
    (proto_reader.run_outcome / subagent_outcome). interrupts_number 0: none."""
    cdef PyObject* outcome
    cdef PyObject* ids = NULL
    cdef PyObject* interrupts = NULL
    cdef int r = -1
    if (seen >> number) & 1:
        outcome = _de_last_text(d, &occ[number], body, number)
    else:
        outcome = _DE_EMPTY
        capi.Py_INCREF(outcome)
    if outcome == NULL:
        return -1
    ids = _de_texts(d, &occ[ids_number], (seen >> ids_number) & 1, body, ids_number, False)
    if ids != NULL and interrupts_number:
        interrupts = _de_texts(d, &occ[interrupts_number], (seen >> interrupts_number) & 1,
                               body, interrupts_number, True)
    if ids != NULL and (interrupts != NULL or not interrupts_number):
        r = _de_outcome_set(out, outcome, ids, interrupts,
                            _DE_K_PENDING if interrupts_number else _DE_K_INTERRUPT_IDS)
    capi.Py_DECREF(outcome)
    capi.Py_XDECREF(ids)
    capi.Py_XDECREF(interrupts)
    return r


cdef int _de_outcome_set(PyObject* out, PyObject* outcome, PyObject* ids, PyObject* interrupts,
                         PyObject* ids_key) noexcept:
    cdef PyObject* result
    cdef bint is_interrupt
    cdef int r
    if capi.PyUnicode_GET_LENGTH(outcome) == 0:
        if capi.PyList_GET_SIZE(ids) and capi.PyDict_SetItem(out, ids_key, ids) < 0:
            return -1
        if interrupts != NULL and capi.PyList_GET_SIZE(interrupts) \
                and capi.PyDict_SetItem(out, _DE_K_INTERRUPTS, interrupts) < 0:
            return -1
        return 0
    result = capi.PyDict_New()
    if result == NULL:
        return -1
    is_interrupt = interrupts != NULL and agw_str_eq_ascii(outcome, "interrupt", 9)
    r = capi.PyDict_SetItem(result, _DE_K_TYPE, outcome)
    if r == 0 and is_interrupt:
        r = capi.PyDict_SetItem(result, _DE_K_INTERRUPTS, interrupts)
    if r == 0 and capi.PyList_GET_SIZE(ids):
        r = capi.PyDict_SetItem(result, ids_key, ids)
    if r == 0 and not is_interrupt and interrupts != NULL and capi.PyList_GET_SIZE(interrupts):
        r = capi.PyDict_SetItem(result, _DE_K_INTERRUPTS, interrupts)
    if r == 0:
        r = capi.PyDict_SetItem(out, _DE_K_OUTCOME, result)
    capi.Py_DECREF(result)
    return r


cdef PyObject* _de_event(_DeState* d, _de_ptr p, Py_ssize_t n) noexcept:
    """The event dict of one payload (proto_reader.event); NULL for the reference."""
    cdef _DeOcc top[_DE_MAXNUM]
    cdef uint64_t seen
    cdef int arm
    cdef _DeRange whole
    cdef _DeRange one
    cdef _DeRange* owned = NULL
    cdef _DeBody payload = _de_one(&whole, p, p + n)
    cdef _DeBody sub
    cdef PyObject* out
    if n == 0:
        _de_fault(d, _DF_EMPTY, NULL, NULL)
        return NULL
    if _de_scan(d, payload, &_de_envelope, top, &seen) < 0:
        return NULL
    if seen == 0:
        _de_fault(d, _DF_NO_ARM, NULL, NULL)  # an unknown event, or none: _de_no_arm says
        return NULL
    if agw_popcount64(seen) > 1:
        _de_two_arms(d, 0, seen, payload)
        return NULL
    arm = agw_ctz64(seen)
    if _de_take(&top[arm], payload, arm, &one, &sub, &owned) < 0:
        return NULL
    out = _de_arm(d, &_de_events[arm], sub)
    free(owned)
    if out == NULL and d.fault.code == _DF_NO_BASE:
        d.fault.at = _de_tag_of(payload, arm, 2, False)
    return out


cdef PyObject* _de_arm(_DeState* d, _DeSpec* sp, _DeBody body) noexcept:
    # The arm message: its base event, its fields, the special shapes.
    cdef _DeOcc occ[_DE_MAXNUM]
    cdef uint64_t seen
    cdef _DeRange one
    cdef _DeRange* owned = NULL
    cdef _DeBody base
    cdef PyObject* out
    if _de_scan(d, body, sp, occ, &seen) < 0:
        return NULL
    if not (seen >> _DE_N_BASE) & 1:
        _de_fault(d, _DF_NO_BASE, NULL, NULL)   # located by _de_event
        d.fault.a = <uint64_t>(sp - _de_events)
        return NULL
    if _de_take(&occ[_DE_N_BASE], body, _DE_N_BASE, &one, &base, &owned) < 0:
        return NULL
    out = _de_arm_body(d, sp, occ, seen, body, base)
    free(owned)
    return out


cdef PyObject* _de_arm_body(_DeState* d, _DeSpec* sp, _DeOcc* occ, uint64_t seen, _DeBody body,
                            _DeBody base_body) noexcept:
    cdef _DeOcc base[_DE_MAXNUM]
    cdef uint64_t baseen
    cdef long declared = 0
    cdef PyObject* out
    cdef PyObject* v
    cdef int r
    if _de_scan(d, base_body, &_de_base, base, &baseen) < 0:
        return NULL
    if (baseen >> _DE_N_TYPE) & 1:
        declared = <int>(<uint32_t>base[_DE_N_TYPE].v)
    if declared != sp.type_value:
        # the base event declares another type: located at its last type field, else
        # at the base event
        if (baseen >> _DE_N_TYPE) & 1:
            _de_fault(d, _DF_TYPE, _de_tag_of(base_body, _DE_N_TYPE, 0, True), NULL)
        else:
            _de_fault(d, _DF_TYPE, _de_tag_of(body, _DE_N_BASE, 2, False), NULL)
        d.fault.a = <uint64_t>(sp - _de_events)
        d.fault.b = <uint64_t>(<uint32_t>declared)
        return NULL
    out = capi.PyDict_New()
    if out == NULL:
        return NULL
    r = capi.PyDict_SetItem(out, _DE_K_TYPE, sp.type_name)
    if r == 0:
        r = _de_put(d, sp, occ, seen, body, out)
    if r == 0 and sp.special == _DE_RUN_FINISHED:
        r = _de_outcome(d, occ, seen, body, out, _DE_N_RUN_OUTCOME, _DE_N_RUN_IDS,
                        _DE_N_RUN_INTERRUPTS)
    elif r == 0 and sp.special == _DE_SUBAGENT_FINISHED:
        r = _de_outcome(d, occ, seen, body, out, _DE_N_SUB_OUTCOME, _DE_N_SUB_IDS, 0)
    elif r == 0 and sp.special == _DE_TOOL_CALL_RESULT:
        if (seen >> _DE_N_TR_TEXT) & 1:
            if (seen >> _DE_N_TR_PARTS) & 1:
                # both string content and content parts
                _de_fault(d, _DF_TOOL_RESULT, _de_tag_of(body, _DE_N_TR_PARTS, 2, False), NULL)
                r = -1
                v = NULL
            else:
                v = _de_last_text(d, &occ[_DE_N_TR_TEXT], body, _DE_N_TR_TEXT)
        else:
            v = _de_parts(d, &occ[_DE_N_TR_PARTS], (seen >> _DE_N_TR_PARTS) & 1, body,
                          _DE_N_TR_PARTS)
        if r == 0:
            r = _de_set(out, _DE_K_CONTENT, v)
    if r == 0:
        r = _de_put(d, &_de_base, base, baseen, base_body, out)
    if r < 0:
        capi.Py_DECREF(out)
        return NULL
    return out


# -- state, options, entry point ------------------------------------------------------

cdef object _DE_ERROR = "error"     # the same interned objects as the defaults
cdef object _DE_REPLACE = "replace"


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


@cython.binding(False)     # a plain builtin: the cheapest call CPython has
def decode_payload(data, *, invalid_utf8="error", max_depth=1024):
    """decode_payload(data, *, invalid_utf8="error", max_depth=1024) -> dict

    Decode one serialized ``ag_ui.Event`` (a frame's payload) to its JSON dict.
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
        return _de_py.decode_payload(data, invalid_utf8=invalid_utf8, max_depth=max_depth)
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
        return _de_py.decode_payload(data, invalid_utf8=invalid_utf8, max_depth=max_depth)
    try:
        out = _de_decode(p, n, errors, depth, data)
    finally:
        if have_view:
            capi.PyBuffer_Release(&view)
    if out is None:
        _de_fallbacks += 1
        return _de_py.decode_payload(data, invalid_utf8=invalid_utf8, max_depth=max_depth)
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
            _de_warnings.warn(text, _de_UnknownPartWarning, stacklevel=1)
    return out


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
        return _de_py.fault_error(buf, d.max_depth, code, f.at - p, f.end - p)
    if code == _DF_GROUP:
        return _de_py.fault_error(buf, d.max_depth, code, f.a, f.at - p, f.pos - p, f.end - p, f.b)
    if code == _DF_UTF8:
        return _de_py.fault_error(buf, d.max_depth, code, f.at - p, f.end - p)
    if code == _DF_DEPTH or code == _DF_TOOL_RESULT:
        return _de_py.fault_error(buf, d.max_depth, code, f.at - p)
    if code == _DF_EMPTY:
        return _de_py.fault_error(buf, d.max_depth, code)
    if code == _DF_ONEOF:
        return _de_py.fault_error(buf, d.max_depth, code, f.b, f.a, f.at - p)
    if code == _DF_NO_ARM:
        return _de_py.fault_error(buf, d.max_depth, code, *_de_no_arm(p, n))
    if code == _DF_NO_BASE:
        return _de_py.fault_error(buf, d.max_depth, code, f.a, f.at - p)
    if code == _DF_TYPE:
        declared = <long>(<int>(<uint32_t>f.b))
        return _de_py.fault_error(buf, d.max_depth, code, f.a, declared, f.at - p)
    if code == _DF_CONTENT:
        return _de_py.fault_error(
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


cdef void _de_g_clear() noexcept:
    global _de_g_at
    _de_g_at = NULL


def _decoder_fallbacks():
    """How many payloads the C decoder handed to proto_reader to decode (a failure
    that records no fault: memory, odd input types) since import; for tests that
    check the C path covers valid input and refusals alike."""
    return _de_fallbacks


# -- tables from agui_wire.schema ----------------------------------------------------

cdef object _de_key(str name):
    key = _de_sys.intern(name)
    _de_keep.append(key)
    return key


cdef void _de_fill(_DeSpec* sp, object fields, dict ids, int special, tuple extra=()) except *:
    """A spec for `fields`; `extra`: more field numbers to record (wire type 2)."""
    cdef int i, wt
    fields = tuple(fields)
    if len(fields) > _DE_MAXF:
        raise ImportError("agui_wire._fast: a message has more fields than the decoder holds")
    defaults = _de_py._DEFAULTS
    sp.nfields = len(fields)
    sp.special = special
    sp.type_name = NULL
    sp.warning = NULL
    sp.source = 0
    sp.type_value = 0
    sp.maxnum = 0
    for i in range(_DE_MAXNUM):
        sp.wanted[i] = -1
    for i, f in enumerate(fields):
        fd = &sp.fields[i]
        key = _de_key(f.name)
        fd.key = <PyObject*>key
        fd.number = f.number
        fd.kind = int(f.kind)
        fd.sub = ids[f.message] if f.message is not None else -1
        fd.repeated = f.repeated
        fd.omit_empty = f.omit_empty
        fd.dflt = NULL
        fd.last = NULL
        if not f.repeated and not f.presence:
            dflt = defaults[f.kind]
            _de_keep.append(dflt)
            fd.dflt = <PyObject*>dflt
        if f.repeated and f.message is not None and ids[f.message] in (_de_part_union, _de_source_union):
            raise ImportError("agui_wire._fast: a repeated field of unions is not supported")
        if fd.kind not in _de_schema.KIND_WIRE_TYPE or (
            f.repeated and fd.kind not in (_K_STRING, _K_MESSAGE)
        ):
            raise ImportError(f"agui_wire._fast: {f.name}: a field kind the decoder has no code for")
        wt = _de_schema.KIND_WIRE_TYPE[f.kind]
        _de_want(sp, f.number, wt, f.name)
    for number in extra:
        _de_want(sp, number, 2)


cdef void _de_want(_DeSpec* sp, int number, int wt, str name="") except *:
    if not 0 < number < _DE_MAXNUM:
        raise ImportError(
            f"agui_wire._fast: field {name or '?'} = {number} is beyond the decoder's "
            f"tables (numbers 1..{_DE_MAXNUM - 1}: a uint64 mask per message)"
        )
    sp.wanted[number] = wt
    if number > sp.maxnum:
        sp.maxnum = number


cdef PyObject* _de_const(object value) except NULL:
    _de_keep.append(value)
    return <PyObject*>value


cdef int _de_payload(object payload) except -1:
    if payload is None:
        raise ImportError("agui_wire._fast: an outcome the decoder expects has no payload list")
    return payload[1]


cdef void _de_init() except *:
    global _de_part_union, _de_source_union, _de_interrupt_id, _de_nops
    global _DE_K_CONTENT, _DE_K_ROLE, _DE_K_SOURCE, _DE_K_TYPE, _DE_K_OUTCOME
    global _DE_K_PENDING, _DE_K_INTERRUPTS, _DE_K_INTERRUPT_IDS, _DE_W_UNKNOWN_PART
    global _DE_N_BASE, _DE_N_TYPE, _DE_N_TEXT, _DE_N_PARTS, _DE_N_MAP, _DE_N_TR_TEXT
    global _DE_N_TR_PARTS, _DE_N_RUN_OUTCOME, _DE_N_RUN_IDS, _DE_N_RUN_INTERRUPTS
    global _DE_N_SUB_OUTCOME, _DE_N_SUB_IDS
    cdef int i
    sc = _de_schema
    M = sc.MESSAGES
    # the C constants of the JSON value walk, and the field kinds, against the schema
    if (
        (_DV_NULL, _DV_NUMBER, _DV_STRING, _DV_BOOL, _DV_STRUCT, _DV_LIST)
        != (sc.VALUE_NULL, sc.VALUE_NUMBER, sc.VALUE_STRING, sc.VALUE_BOOL, sc.VALUE_STRUCT,
            sc.VALUE_LIST)
        or (_DV_FIELDS, _DV_KEY, _DV_VALUE, _DV_VALUES)
        != (sc.STRUCT_FIELDS, sc.STRUCT_KEY, sc.STRUCT_VALUE, sc.LIST_VALUES)
        or max(sc.VALUE_WIRE_TYPES) >= _DV_MAX
        or (_K_STRING, _K_INT64, _K_BOOL, _K_VALUE, _K_STRUCT, _K_MESSAGE, _K_PATCH_OP)
        != (sc.Kind.STRING, sc.Kind.INT64, sc.Kind.BOOL, sc.Kind.VALUE, sc.Kind.STRUCT,
            sc.Kind.MESSAGE, sc.Kind.PATCH_OP)
    ):
        raise ImportError("agui_wire._fast: google.protobuf.Value or schema.Kind differ from the decoder's")
    if AGW_MAX_EXACT_DOUBLE != sc.MAX_EXACT_INT:
        raise ImportError("agui_wire._fast: the decoder's integer limit differs from the schema's")
    _DE_N_BASE = sc.BASE_EVENT_NUMBER
    _DE_N_TYPE = sc.BASE_TYPE_NUMBER
    _DE_N_TEXT = sc.MESSAGE_CONTENT["str"]
    _DE_N_PARTS = sc.MESSAGE_CONTENT["list"]
    _DE_N_MAP = sc.MESSAGE_CONTENT["dict"]
    _DE_N_TR_TEXT = sc.TOOL_RESULT_CONTENT["str"]
    _DE_N_TR_PARTS = sc.TOOL_RESULT_CONTENT["list"]
    _DE_N_RUN_OUTCOME = sc.RUN_OUTCOME_NUMBER
    _DE_N_RUN_IDS = _de_payload(sc.RUN_OUTCOME_PAYLOAD["success"])
    _DE_N_RUN_INTERRUPTS = _de_payload(sc.RUN_OUTCOME_PAYLOAD["interrupt"])
    _DE_N_SUB_OUTCOME = sc.SUBAGENT_OUTCOME_NUMBER
    _DE_N_SUB_IDS = _de_payload(sc.SUBAGENT_OUTCOME_PAYLOAD["suspended"])
    if len(sc.PATCH_OPS) > 8:
        raise ImportError("agui_wire._fast: more patch ops than the decoder holds")
    ids = {name: i for i, name in enumerate(M)}
    if len(ids) > _DE_MAXSPEC:
        raise ImportError("agui_wire._fast: more messages than the decoder holds")
    _de_part_union = ids["InputContent"]
    _de_source_union = ids["InputContentSource"]
    _de_interrupt_id = ids["Interrupt"]
    part_by_name = {name: ptype for ptype, (_, name) in sc.PART_ARMS.items()}
    source_by_name = {name: stype for stype, (_, name) in sc.SOURCE_ARMS.items()}
    for name, i in ids.items():
        spec = M[name]
        if name == "InputContent":
            _de_fill(&_de_specs[i], (), ids, _DS_PART, tuple(a for a, _ in sc.PART_ARMS.values()))
        elif name == "InputContentSource":
            _de_fill(&_de_specs[i], (), ids, _DS_SOURCE, tuple(a for a, _ in sc.SOURCE_ARMS.values()))
        elif name == "Message":
            _de_fill(&_de_specs[i], spec.fields, ids, _DS_CHAT, tuple(sc.MESSAGE_CONTENT.values()))
        else:
            _de_fill(&_de_specs[i], spec.fields, ids, _DS_PLAIN)
        if name in part_by_name:
            ptype = part_by_name[name]
            _de_specs[i].type_name = _de_const(_de_key(ptype))
            for f in spec.fields:
                if f.name == "source":
                    _de_specs[i].source = f.number
                    _de_specs[i].warning = _de_const(
                        f"dropped a {ptype} content part whose source is of an unknown kind"
                    )
        if name in source_by_name:
            _de_specs[i].type_name = _de_const(_de_key(source_by_name[name]))
    # (the arm numbers index these tables: _de_fill checked them above)
    for ptype, (arm, name) in sc.PART_ARMS.items():
        _de_part_arm[arm] = ids[name]
    for stype, (arm, name) in sc.SOURCE_ARMS.items():
        _de_source_arm[arm] = ids[name]
    # events
    specials = {
        "RUN_FINISHED": (_DE_RUN_FINISHED, (
            _DE_N_RUN_OUTCOME, _DE_N_RUN_IDS, _DE_N_RUN_INTERRUPTS)),
        "SUBAGENT_FINISHED": (_DE_SUBAGENT_FINISHED, (_DE_N_SUB_OUTCOME, _DE_N_SUB_IDS)),
        "TOOL_CALL_RESULT": (_DE_TOOL_CALL_RESULT, (_DE_N_TR_TEXT, _DE_N_TR_PARTS)),
    }
    _de_fill(&_de_envelope, (), ids, _DS_PLAIN, tuple(sc.EVENT_BY_ARM))
    for arm, ev in sc.EVENT_BY_ARM.items():
        special, extra = specials.get(ev.type, (_DS_PLAIN, ()))
        _de_fill(&_de_events[arm], ev.message.fields, ids, special, (_DE_N_BASE, *extra))
        _de_events[arm].type_name = _de_const(_de_key(ev.type))
        _de_events[arm].type_value = ev.type_value
    _de_fill(&_de_base, sc.BASE_FIELDS, ids, _DS_PLAIN)
    _de_want(&_de_base, _DE_N_TYPE, sc.WIRE_VARINT)
    for i, op in enumerate(sc.PATCH_OPS):
        _de_ops[i] = _de_const(_de_key(op))
    _de_nops = len(sc.PATCH_OPS)
    for i in range(_DV_MAX):
        _DE_VWT[i] = -1
    for number, wt in sc.VALUE_WIRE_TYPES.items():
        _DE_VWT[number] = wt
    for role, content in sc.ROLE_CONTENT.items():
        _de_roles[_de_key(role)] = (1 if "list" in content else 0) | (2 if "dict" in content else 0)
    _DE_K_CONTENT = _de_const(_de_key("content"))
    _DE_K_ROLE = _de_const(_de_key("role"))
    _DE_K_SOURCE = _de_const(_de_key("source"))
    _DE_K_TYPE = _de_const(_de_key("type"))
    _DE_K_OUTCOME = _de_const(_de_key("outcome"))
    _DE_K_PENDING = _de_const(_de_key("pendingToolCallIds"))
    _DE_K_INTERRUPTS = _de_const(_de_key("interrupts"))
    _DE_K_INTERRUPT_IDS = _de_const(_de_key("interruptIds"))
    _DE_W_UNKNOWN_PART = _de_const(
        "dropped a content part of a kind this AG-UI version does not know"
    )


_de_init()
