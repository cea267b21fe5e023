# Cython twin of proto_reader.py: one ag_ui.Event payload -> event dict. The
# contract (protobuf merge semantics, UTF-8 policy, depth, the special shapes,
# warnings) is the module doc of proto_reader.py; tests/differential/test_proto_codec.py
# and test_proto_bytes.py (hostile bytes) hold the two to the same dicts and errors.
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
#
# The parts, in proto_reader.py's order (each file stands alone: tests/contract/test_c_twins.py):
#   _proto_reader_wire.pxi      the C types, the wire level (read_varint, read_field,
#                               skip_group), faults recorded for fault_error, and a message's
#                               fields (_Reader.scan, text)
#   _proto_reader_messages.pxi  messages (put_fields, field_value, message), JSON values
#                               (head, entry, run, value, struct), oneofs, content parts and
#                               chat messages
#   _proto_reader_event.pxi     the event (event, run_outcome, subagent_outcome, the texts)
#   _proto_reader_entry.pxi     the decoder state, decode_payload and its refusals
#   _proto_reader_tables.pxi    the C tables, built from agui_wire.schema at import

from libc.math cimport fabs, floor, isfinite, signbit
from libc.stdint cimport uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

from agui_wire._codec import seam as _seam

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

# the depth limit and proto_reader's fault codes
cdef long _DE_MAX_DEPTH = _seam.schema.MAX_DEPTH_LIMIT
cdef int _DF_WIRE = _seam.FAULT_WIRE
cdef int _DF_GROUP = _seam.FAULT_GROUP
cdef int _DF_UTF8 = _seam.FAULT_UTF8
cdef int _DF_DEPTH = _seam.FAULT_DEPTH
cdef int _DF_EMPTY = _seam.FAULT_EMPTY
cdef int _DF_ONEOF = _seam.FAULT_ONEOF
cdef int _DF_NO_ARM = _seam.FAULT_NO_ARM
cdef int _DF_NO_BASE = _seam.FAULT_NO_BASE
cdef int _DF_TYPE = _seam.FAULT_TYPE
cdef int _DF_CONTENT = _seam.FAULT_CONTENT
cdef int _DF_TOOL_RESULT = _seam.FAULT_TOOL_RESULT

# A group refused by _de_group, for the caller to record: set and read within one
# C call chain (no Python code runs in between), cleared when read.
cdef _de_ptr _de_g_at = NULL     # the group's start tag (NULL: no group refused)
cdef _de_ptr _de_g_pos = NULL    # the step refused
cdef uint64_t _de_g_number = 0
cdef uint64_t _de_g_top = 0


# -- wire level (read_varint, read_field, skip_group) ----------------------------------

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


cdef void _de_g_clear() noexcept:
    global _de_g_at
    _de_g_at = NULL


# -- faults: where proto_reader's refusals are, for fault_error to word ----------------

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


# -- a message's fields (_Reader.scan, text, occurrences) ------------------------------

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
