# Cython twin of sse_writer.py, part 2 of 3: messages and the event, by their shapes
# (strategy: _sse_writer_json.pxi). Each JSON object of a known shape is read once,
# its members parked in order on the scratch's entry stack with their slots (which
# keys are there: the discriminator, what is required, what is extra), then written
# from there, each value as its field's kind says and held to the field's rules. A
# key whose value is None is left out where the reference's omitOptionalNulls leaves
# it out (a key the shape declares optional: sse_writer's walkers); nulls stay in
# keys a shape does not declare, and everywhere below them.

# uses _proto_writer*.pxi: _EN_BAIL, _EN_MAXOPEN, _EN_MAXSLOT, _EnField, _EnOutcome, _EnSpec
# uses _proto_writer*.pxi: _EnTable, _EV_CONTENT, _EV_OUTCOME, _EV_RUN_FINISHED
# uses _proto_writer*.pxi: _EV_SUBAGENT_FINISHED, _EV_TOOL_CALL_RESULT, _EV_TYPE
# uses _proto_writer*.pxi: _MSG_CONTENT, _OC_TYPE, _OP_SLOT, _PART_TYPE, _SP_CHAT
# uses _proto_writer*.pxi: _SP_PATCH, _SP_PLAIN, _SRC_TYPE, _en_base
# uses _proto_writer*.pxi: _en_event_index, _en_events, _en_is_pointer, _en_lookup
# uses _proto_writer*.pxi: _en_op_required, _en_ops, _en_outcome_index, _en_outcomes
# uses _proto_writer*.pxi: _en_part_index, _en_part_types, _en_parts, _en_role_index
# uses _proto_writer*.pxi: _en_roles, _en_run_outcomes, _en_source_types, _en_specs
# uses _proto_writer*.pxi: _en_sub_outcomes, _en_types, _en_key

from libc.math cimport floor, isfinite
from libc.stdint cimport uint64_t
from libc.stdlib cimport realloc

# a spec with no 1:1 fields (an outcome object's slots are its tag and payload)
cdef object _SW_ROLE = _en_key("role")    # the Message key, as its index holds it
cdef object _SW_TYPE = _en_key("type")    # a union's (content part, source) tag key
cdef _EnSpec _sw_no_fields


# -- containers open on the way down (a container inside itself is a cycle) ---------------

cdef inline int _sw_enter(_SwOut* w, PyObject* obj) noexcept:
    if _sw_is_open(w, obj) or w.nopen == _EN_MAXOPEN:
        return _EN_BAIL
    w.open[w.nopen] = obj
    w.nopen += 1
    return 0


# -- fields --------------------------------------------------------------------------------

cdef inline int _sw_text(_SwOut* w, _EnField* f, PyObject* v) noexcept:
    """A string field, held to its rules (proto_writer's check_text)."""
    if not capi.PyUnicode_CheckExact(v):
        return _EN_BAIL
    if f.choices != NULL and _en_lookup(f.choices, v) < 0:
        return _EN_BAIL
    if f.pointer and not _en_is_pointer(v):
        return _EN_BAIL
    return _sw_str(w, v)


cdef inline int _sw_int64(_SwOut* w, _EnField* f, PyObject* v) noexcept:
    """An int64 field: a safe integer at least f.minimum, as given (an integral
    float stays a float, as orjson writes it)."""
    cdef long long i
    cdef int overflow = 0
    cdef double d
    if capi.PyLong_CheckExact(v):
        i = capi.PyLong_AsLongLongAndOverflow(v, &overflow)
        if overflow or i < f.minimum or i > AGW_MAX_SAFE:
            return _EN_BAIL
        return _sw_int(w, i)
    if capi.PyFloat_CheckExact(v):
        d = capi.PyFloat_AS_DOUBLE(v)
        if not isfinite(d) or floor(d) != d or d < <double>f.minimum or d > <double>AGW_MAX_SAFE:
            return _EN_BAIL
        return _sw_double(w, d)
    return _EN_BAIL


cdef int _sw_field(_SwOut* w, _EnField* f, PyObject* v, bint omit, int level) noexcept:
    """The value of a present, non-None 1:1 field, inside ``level`` containers."""
    cdef Py_ssize_t n, j
    cdef PyObject* item
    cdef bint is_list
    if f.repeated:
        is_list = capi.PyList_CheckExact(v)
        if not is_list and not capi.PyTuple_CheckExact(v):
            return _EN_BAIL
        n = capi.PyList_GET_SIZE(v) if is_list else capi.PyTuple_GET_SIZE(v)
        if n < f.min_items or _sw_enter(w, v) < 0 or _sw_byte(w, 91) < 0:
            return _EN_BAIL
        for j in range(n):
            item = capi.PyList_GET_ITEM(v, j) if is_list else capi.PyTuple_GET_ITEM(v, j)
            if j and _sw_byte(w, 44) < 0:
                return _EN_BAIL
            if f.kind == _K_STRING:
                if not capi.PyUnicode_CheckExact(item) or _sw_str(w, item) < 0:
                    return _EN_BAIL
            elif _sw_message(w, &_en_specs[f.sub], item, omit, level + 1) < 0:
                return _EN_BAIL
        w.nopen -= 1
        return _sw_byte(w, 93)
    if f.kind == _K_STRING:
        return _sw_text(w, f, v)
    if f.kind == _K_MESSAGE:
        return _sw_message(w, &_en_specs[f.sub], v, omit, level)
    if f.kind == _K_VALUE or f.kind == _K_STRUCT:
        if (f.kind == _K_STRUCT or f.json_object) and not capi.PyDict_CheckExact(v):
            return _EN_BAIL
        return _sw_json(w, v, level)
    if f.kind == _K_INT64:
        return _sw_int64(w, f, v)
    if f.kind == _K_BOOL:
        if v == capi.Py_True:
            return _sw_raw(w, "true", 4)
        if v == capi.Py_False:
            return _sw_raw(w, "false", 5)
        return _EN_BAIL
    # _K_PATCH_OP: a known op name
    if not capi.PyUnicode_CheckExact(v) or _en_lookup(_en_ops, v) < 0:
        return _EN_BAIL
    return _sw_str(w, v)


cdef inline bint _sw_has_required(
    _EnSpec* sp, PyObject** slots, uint64_t present, uint64_t more
) noexcept:
    """Whether every field ``sp`` requires (and the slots ``more`` names) is there,
    and not None unless JSON null is a value there (proto_writer's fields())."""
    cdef uint64_t want = sp.required_slots | more
    cdef uint64_t check
    if present & want != want:
        return False
    check = want & ~sp.nullable_slots
    while check:
        if slots[agw_ctz64(check)] == capi.Py_None:
            return False
        check &= check - 1
    return True


cdef Py_ssize_t _sw_collect(
    _SwOut* w, PyObject* obj, _EnTable* index, PyObject** slots, uint64_t* present,
    Py_ssize_t* unmatched
) noexcept:
    """Park the members of the exact dict ``obj`` on the entry stack, in order, with
    their slots, and its known values in ``slots``; returns where they start, or
    BAIL (a key that is not an exact str: sse_writer reads it)."""
    cdef Py_ssize_t n = capi.PyDict_GET_SIZE(obj), pos = 0, miss = 0, cap
    cdef Py_ssize_t base = w.nentries
    cdef PyObject* k
    cdef PyObject* v
    cdef uint64_t mask = 0
    cdef int i
    cdef void* mem
    cdef _SwEntry* e
    if base + n > w.entries_cap:
        cap = max(2 * w.entries_cap, base + n, 64)
        mem = realloc(w.entries, <size_t>cap * sizeof(_SwEntry))
        if mem == NULL:
            return _EN_BAIL
        w.entries = <_SwEntry*>mem
        w.entries_cap = cap
    e = w.entries + base
    while capi.agw_dict_next(obj, &pos, &k, &v):
        if not capi.PyUnicode_CheckExact(k):
            return _EN_BAIL
        i = _en_lookup(index, k)
        e.key = k
        e.value = v
        e.slot = i
        e += 1
        if i < 0:
            miss += 1
        else:
            slots[i] = v
            mask |= (<uint64_t>1) << i
    w.nentries = base + n
    present[0] = mask
    unmatched[0] = miss
    return base


cdef inline PyObject* _sw_get(PyObject* obj, PyObject* key) noexcept:
    """The value of the exact str ``key`` in the exact dict ``obj``, found among its
    members (an object read first for its role or type is small: a scan of a few
    keys, by identity first, costs less than a hash lookup); NULL if no exact str
    key equals it (then the walk, which takes exact str keys only, hands it over)."""
    cdef Py_ssize_t pos = 0
    cdef PyObject* k
    cdef PyObject* v
    while capi.agw_dict_next(obj, &pos, &k, &v):
        if k == key or (capi.PyUnicode_CheckExact(k) and agw_str_eq(k, key)):
            return v
    return NULL


# -- one object of a known shape ---------------------------------------------------------

ctypedef struct _SwShape:       # how the keys of one JSON object are written
    _EnTable* index             # key -> slot
    _EnSpec* spec               # its 1:1 fields (field_of)
    _EnSpec* base               # events: the base event's fields too; else NULL
    uint64_t known              # slots that are not extra keys
    uint64_t declared           # slots whose None is left out (the null rule)
    int tag                     # a discriminator slot, written as the string it is
    int special                 # a slot written by _sw_special (content, outcome); -1
    int special_kind            # what _sw_special writes there
    int carriers                # content: the JSON types allowed (1 str, 2 parts, 4 object)
    _EnOutcome* outcome         # an outcome's payload (outcome objects), or NULL
    _EnTable* outcomes          # an event's outcome types, or NULL


cdef enum:
    _SW_CONTENT = 1             # message / TOOL_CALL_RESULT content
    _SW_OUTCOME = 2             # RUN_FINISHED / SUBAGENT_FINISHED outcome
    _SW_PAYLOAD = 3             # an outcome's payload list


cdef int _sw_special(
    _SwOut* w, _SwShape* sh, PyObject* v, bint omit, int level
) noexcept:
    if sh.special_kind == _SW_PAYLOAD:
        return _sw_field(w, &sh.outcome.field, v, omit, level)
    if sh.special_kind == _SW_OUTCOME:
        return _sw_outcome(w, v, sh.outcomes, omit, level)
    # content: by its JSON type, if the shape allows it
    if capi.PyUnicode_CheckExact(v) and sh.carriers & 1:
        return _sw_str(w, v)
    if (capi.PyList_CheckExact(v) or capi.PyTuple_CheckExact(v)) and sh.carriers & 2:
        return _sw_parts(w, v, omit, level)
    if capi.PyDict_CheckExact(v) and sh.carriers & 4:
        return _sw_json(w, v, level)
    return _EN_BAIL


cdef inline int _sw_member(
    _SwOut* w, _SwShape* sh, PyObject* k, PyObject* v, int slot, bint first, bint omit,
    int level
) noexcept:
    """One member of an object of a known shape: 1 written, 0 left out (an optional
    key set to None), BAIL."""
    cdef bint keep
    cdef int i
    cdef _EnField* f
    if slot < 0 or not (sh.known >> slot) & 1:
        if w.extra_error or _sw_key(w, k, first) < 0 or _sw_json(w, v, level) < 0:
            return _EN_BAIL
        return 1
    keep = omit and (sh.declared >> slot) & 1
    f = NULL
    i = sh.spec.field_of[slot]
    if i >= 0:
        f = &sh.spec.fields[i]
    elif sh.base != NULL and sh.base.field_of[slot] >= 0:
        f = &sh.base.fields[sh.base.field_of[slot]]
    if v == capi.Py_None:
        if w.check:     # a JSON null where a shape names the key: a value only here
            return 1 if f != NULL and (f.nullable or f.null_is_absent) else _EN_BAIL
        if keep and (f == NULL or not f.nullable):
            return 0        # an optional key: left out (a required one is refused)
        if _sw_known_key(w, k, first) < 0 or _sw_raw(w, "null", 4) < 0:
            return _EN_BAIL
        return 1
    if _sw_known_key(w, k, first) < 0:
        return _EN_BAIL
    if slot == sh.tag:
        if _sw_str(w, v) < 0:
            return _EN_BAIL
    elif slot == sh.special:
        if _sw_special(w, sh, v, keep, level) < 0:
            return _EN_BAIL
    elif f == NULL or _sw_field(w, f, v, keep, level) < 0:
        return _EN_BAIL
    return 1


cdef int _sw_object(_SwOut* w, _SwShape* sh, Py_ssize_t base, bint omit, int level) noexcept:
    """The object whose members _sw_collect parked at ``base`` (its presence already
    checked), in its own order; ``level``: the containers open with it. Its
    members leave the entry stack."""
    cdef Py_ssize_t j, end = w.nentries
    cdef int r
    cdef bint first = True
    if _sw_byte(w, 123) < 0:
        return _EN_BAIL
    for j in range(base, end):
        # re-read: a nested object may move the stack
        r = _sw_member(w, sh, w.entries[j].key, w.entries[j].value, w.entries[j].slot, first,
                       omit, level)
        if r < 0:
            return _EN_BAIL
        if r:
            first = False
    w.nentries = base
    return _sw_byte(w, 125)


cdef int _sw_direct(
    _SwOut* w, _SwShape* sh, PyObject* obj, bint omit, int level, PyObject** slots,
    uint64_t* present, uint64_t* nonnull
) noexcept:
    """An object whose shape needs nothing of it up front, in one pass: its members
    written as they come, their known values in ``slots``, and which slots were there
    (``present``) and not None (``nonnull``), for the caller's checks afterwards (a
    fault found then discards what was written)."""
    cdef Py_ssize_t pos = 0
    cdef PyObject* k
    cdef PyObject* v
    cdef uint64_t seen = 0, values = 0
    cdef int slot, r
    cdef bint first = True
    if _sw_byte(w, 123) < 0:
        return _EN_BAIL
    while capi.agw_dict_next(obj, &pos, &k, &v):
        if not capi.PyUnicode_CheckExact(k):
            return _EN_BAIL
        slot = _en_lookup(sh.index, k)
        if slot >= 0:
            slots[slot] = v
            seen |= (<uint64_t>1) << slot
            if v != capi.Py_None:
                values |= (<uint64_t>1) << slot
        r = _sw_member(w, sh, k, v, slot, first, omit, level)
        if r < 0:
            return _EN_BAIL
        if r:
            first = False
    present[0] = seen
    nonnull[0] = values
    return _sw_byte(w, 125)


cdef inline bint _sw_complete(_EnSpec* sp, uint64_t present, uint64_t nonnull, uint64_t more) noexcept:
    """_sw_has_required from the masks _sw_direct gives."""
    cdef uint64_t want = sp.required_slots | more
    return (nonnull | (present & sp.nullable_slots)) & want == want


cdef int _sw_message(_SwOut* w, _EnSpec* sp, PyObject* obj, bint omit, int level) noexcept:
    """A nested message holding the JSON object ``obj``, inside ``level`` containers
    (proto_writer's message(): chat messages by role, patch operations by op,
    sources by type)."""
    cdef PyObject* slots[_EN_MAXSLOT]
    cdef uint64_t present, nonnull, more = 0
    cdef int r
    cdef PyObject* v
    cdef _SwShape sh
    cdef _EnSpec* arm
    if not capi.PyDict_CheckExact(obj) or _sw_enter(w, obj) < 0:
        return _EN_BAIL
    sh.index = sp.index
    sh.spec = sp
    sh.base = NULL
    sh.known = sp.known
    sh.declared = sp.known
    sh.tag = -1
    sh.special = -1
    sh.outcome = NULL
    if sp.special == _SP_PLAIN or sp.special == _SP_PATCH:
        # one pass; patch operations have no optional keys (their nulls stay), and
        # their op says what else they require
        if _sw_direct(w, &sh, obj, omit and sp.special == _SP_PLAIN, level + 1, slots,
                      &present, &nonnull) < 0:
            return _EN_BAIL
        if sp.special == _SP_PATCH:
            v = slots[_OP_SLOT] if (present >> _OP_SLOT) & 1 else NULL
            if v == NULL or not capi.PyUnicode_CheckExact(v):
                return _EN_BAIL
            r = _en_lookup(_en_ops, v)
            if r < 0:
                return _EN_BAIL
            more = _en_op_required[r]
        if not _sw_complete(sp, present, nonnull, more):
            return _EN_BAIL
        w.nopen -= 1
        return 0
    if sp.special == _SP_CHAT:
        # the role says which keys are the message's (others are extra keys): read
        # first, so the message is written in one pass
        v = _sw_get(obj, <PyObject*>_SW_ROLE)
        if v == NULL or not capi.PyUnicode_CheckExact(v):
            return _EN_BAIL
        r = _en_lookup(_en_role_index, v)
        if r < 0:
            return _EN_BAIL
        sh.known = _en_roles[r].declared     # the role's keys; others are extra
        sh.declared = _en_roles[r].declared
        sh.special = _MSG_CONTENT
        sh.special_kind = _SW_CONTENT
        sh.carriers = _en_roles[r].allowed
        if _sw_direct(w, &sh, obj, omit, level + 1, slots, &present, &nonnull) < 0:
            return _EN_BAIL
        if _en_roles[r].content_required and not (nonnull >> _MSG_CONTENT) & 1:
            return _EN_BAIL
        if not _sw_complete(sp, present, nonnull, _en_roles[r].required):
            return _EN_BAIL
        w.nopen -= 1
        return 0
    # _SP_SOURCE: a union on its type, read first (one pass, as a chat message)
    r = _sw_union(obj, _en_source_types)
    if r < 0:
        return _EN_BAIL
    arm = &_en_specs[r]
    sh.spec = arm
    sh.known = arm.known
    sh.declared = arm.known
    sh.tag = _SRC_TYPE
    if _sw_direct(w, &sh, obj, omit, level + 1, slots, &present, &nonnull) < 0:
        return _EN_BAIL
    if not _sw_complete(arm, present, nonnull, 0):
        return _EN_BAIL
    w.nopen -= 1
    return 0


cdef inline int _sw_union(PyObject* obj, _EnTable* types) noexcept:
    """The arm of the JSON union ``obj`` (a dict) by its ``type``: its index in
    ``types``, or -1."""
    cdef PyObject* v = _sw_get(obj, <PyObject*>_SW_TYPE)
    if v == NULL or not capi.PyUnicode_CheckExact(v):
        return -1
    return _en_lookup(types, v)


cdef int _sw_parts(_SwOut* w, PyObject* seq, bint omit, int level) noexcept:
    """Content parts: each a JSON union on ``type`` (proto_writer's content_parts)."""
    cdef PyObject* slots[_EN_MAXSLOT]
    cdef uint64_t present, nonnull
    cdef Py_ssize_t n, j
    cdef PyObject* part
    cdef int r
    cdef bint is_list = capi.PyList_CheckExact(seq)
    cdef _SwShape sh
    n = capi.PyList_GET_SIZE(seq) if is_list else capi.PyTuple_GET_SIZE(seq)
    if _sw_enter(w, seq) < 0 or _sw_byte(w, 91) < 0:
        return _EN_BAIL
    sh.index = _en_part_index
    sh.base = NULL
    sh.tag = _PART_TYPE
    sh.special = -1
    sh.outcome = NULL
    for j in range(n):
        part = capi.PyList_GET_ITEM(seq, j) if is_list else capi.PyTuple_GET_ITEM(seq, j)
        if j and _sw_byte(w, 44) < 0:
            return _EN_BAIL
        if not capi.PyDict_CheckExact(part) or _sw_enter(w, part) < 0:
            return _EN_BAIL
        r = _sw_union(part, _en_part_types)
        if r < 0:
            return _EN_BAIL
        sh.spec = &_en_parts[r]
        sh.known = _en_parts[r].known
        sh.declared = _en_parts[r].known
        if _sw_direct(w, &sh, part, omit, level + 2, slots, &present, &nonnull) < 0:
            return _EN_BAIL
        if not _sw_complete(sh.spec, present, nonnull, 0):
            return _EN_BAIL
        w.nopen -= 1
    w.nopen -= 1
    return _sw_byte(w, 93)


cdef int _sw_outcome(_SwOut* w, PyObject* outcome, _EnTable* table, bint omit, int level) noexcept:
    """RUN_FINISHED / SUBAGENT_FINISHED ``outcome``: a known type, its payload list."""
    cdef PyObject* slots[_EN_MAXSLOT]
    cdef uint64_t present
    cdef Py_ssize_t unmatched, base
    cdef PyObject* v
    cdef int r
    cdef _EnOutcome* oc
    cdef _SwShape sh
    if not capi.PyDict_CheckExact(outcome) or _sw_enter(w, outcome) < 0:
        return _EN_BAIL
    base = _sw_collect(w, outcome, _en_outcome_index, slots, &present, &unmatched)
    if base < 0:
        return _EN_BAIL
    v = slots[_OC_TYPE] if (present >> _OC_TYPE) & 1 else NULL
    if v == NULL or not capi.PyUnicode_CheckExact(v):
        return _EN_BAIL
    r = _en_lookup(table, v)
    if r < 0:
        return _EN_BAIL
    oc = &_en_outcomes[r]
    sh.index = _en_outcome_index
    sh.spec = &_sw_no_fields    # every slot is the tag or the payload
    sh.base = NULL
    sh.tag = _OC_TYPE
    sh.known = (<uint64_t>1) << _OC_TYPE
    sh.declared = 0
    sh.special = -1
    sh.outcome = oc
    if oc.slot >= 0:
        sh.known |= (<uint64_t>1) << oc.slot
        v = slots[oc.slot] if (present >> oc.slot) & 1 else NULL
        if oc.required and (v == NULL or v == capi.Py_None):
            return _EN_BAIL
        sh.declared = (<uint64_t>1) << oc.slot     # walked; left out when None (optional)
        sh.special = oc.slot
        sh.special_kind = _SW_PAYLOAD
    if w.extra_error and (unmatched or present & ~sh.known):
        return _EN_BAIL
    if _sw_object(w, &sh, base, omit, level + 1) < 0:
        return _EN_BAIL
    w.nopen -= 1
    return 0


cdef int _sw_event(_SwOut* w, PyObject* event) noexcept:
    """The event's JSON (proto_writer's event(): the base event's fields, the arm's,
    and TOOL_CALL_RESULT's content or a finished event's outcome). In one pass when
    ``type`` comes first, as it does in what producers write; else its members are
    parked first."""
    cdef PyObject* slots[_EN_MAXSLOT]
    cdef uint64_t present, nonnull
    cdef Py_ssize_t unmatched, base = 0, pos = 0
    cdef PyObject* k
    cdef PyObject* t = NULL
    cdef PyObject* v
    cdef int r
    cdef bint direct = False
    cdef _EnSpec* sp
    cdef _SwShape sh
    if not capi.PyDict_CheckExact(event):
        return _EN_BAIL
    w.open[0] = event
    w.nopen = 1
    w.nentries = 0
    if capi.agw_dict_next(event, &pos, &k, &t) and capi.PyUnicode_CheckExact(k) \
            and _en_lookup(_en_event_index, k) == _EV_TYPE:
        direct = True
    else:
        base = _sw_collect(w, event, _en_event_index, slots, &present, &unmatched)
        if base < 0:
            return _EN_BAIL
        t = slots[_EV_TYPE] if (present >> _EV_TYPE) & 1 else NULL
    if t == NULL or not capi.PyUnicode_CheckExact(t):
        return _EN_BAIL     # a str subclass (an enum) included: sse_writer reads it
    r = _en_lookup(_en_types, t)
    if r < 0:
        return _EN_BAIL
    sp = &_en_events[r]
    sh.index = _en_event_index
    sh.spec = sp
    sh.base = &_en_base
    sh.known = sp.known
    sh.declared = sp.known
    sh.tag = _EV_TYPE
    sh.special = -1
    sh.outcome = NULL
    sh.outcomes = NULL
    if sp.special == _EV_TOOL_CALL_RESULT:
        sh.special = _EV_CONTENT
        sh.special_kind = _SW_CONTENT
        sh.carriers = 3     # a string or content parts
    elif sp.special == _EV_RUN_FINISHED or sp.special == _EV_SUBAGENT_FINISHED:
        sh.special = _EV_OUTCOME
        sh.special_kind = _SW_OUTCOME
        sh.outcomes = _en_run_outcomes if sp.special == _EV_RUN_FINISHED else _en_sub_outcomes
    if direct:
        if _sw_direct(w, &sh, event, True, 1, slots, &present, &nonnull) < 0:
            return _EN_BAIL
        if not _sw_complete(sp, present, nonnull, 0):
            return _EN_BAIL
        if sh.special == _EV_CONTENT and not (nonnull >> _EV_CONTENT) & 1:
            return _EN_BAIL     # TOOL_CALL_RESULT's content: required
        return 0
    if sh.special == _EV_CONTENT:
        v = slots[_EV_CONTENT] if (present >> _EV_CONTENT) & 1 else NULL
        if v == NULL or v == capi.Py_None:
            return _EN_BAIL
    if w.extra_error and (unmatched or present & ~sh.known):
        return _EN_BAIL
    if not _sw_has_required(sp, slots, present, 0):
        return _EN_BAIL
    return _sw_object(w, &sh, base, True, 1)


cdef int _sw_check_event(_SwOut* w, PyObject* event) noexcept:
    """_sw_event in a decoder's check (w.check), for the common event: ``type`` first
    and no carrier (content, outcome) to read; its members checked as they come, with
    nothing of the writer's. Any other event takes _sw_event's walk."""
    cdef Py_ssize_t pos = 0
    cdef PyObject* k
    cdef PyObject* v
    cdef uint64_t seen, values
    cdef int slot, i, r
    cdef _EnSpec* sp
    cdef _EnField* f
    if not capi.PyDict_CheckExact(event):
        return _EN_BAIL
    if not capi.agw_dict_next(event, &pos, &k, &v) or not capi.PyUnicode_CheckExact(k) \
            or _en_lookup(_en_event_index, k) != _EV_TYPE:
        return _sw_event(w, event)
    if not capi.PyUnicode_CheckExact(v):
        return _EN_BAIL
    r = _en_lookup(_en_types, v)
    if r < 0:
        return _EN_BAIL
    sp = &_en_events[r]
    if sp.special == _EV_TOOL_CALL_RESULT or sp.special == _EV_RUN_FINISHED \
            or sp.special == _EV_SUBAGENT_FINISHED:
        return _sw_event(w, event)
    w.open[0] = event
    w.nopen = 1
    seen = values = (<uint64_t>1) << _EV_TYPE
    while capi.agw_dict_next(event, &pos, &k, &v):
        if not capi.PyUnicode_CheckExact(k):
            return _EN_BAIL
        slot = _en_lookup(_en_event_index, k)
        if slot < 0 or not (sp.known >> slot) & 1:
            continue        # a key the shape does not name: any JSON, as read
        seen |= (<uint64_t>1) << slot
        i = sp.field_of[slot]
        if i >= 0:
            f = &sp.fields[i]
        elif _en_base.field_of[slot] >= 0:
            f = &_en_base.fields[_en_base.field_of[slot]]
        else:
            return _EN_BAIL
        if v == capi.Py_None:
            if not (f.nullable or f.null_is_absent):
                return _EN_BAIL
            continue
        values |= (<uint64_t>1) << slot
        if f.kind == _K_STRING and not f.repeated and f.choices == NULL and not f.pointer:
            if not capi.PyUnicode_CheckExact(v):
                return _EN_BAIL
        elif f.kind == _K_VALUE and not f.json_object:
            pass            # any JSON value, as read
        elif _sw_field(w, f, v, False, 1) < 0:
            return _EN_BAIL
    return 0 if _sw_complete(sp, seen, values, 0) else _EN_BAIL
