# Cython twin of proto_writer.py, part 2 of 5: messages and the event, in the order of
# proto_writer._Encoder's sections of those names (strategy: _proto_writer_wire.pxi).
# A message's JSON object is read with one PyDict_Next walk (_en_collect) into slots;
# its fields are then written in descending number from the slots.

from libc.math cimport floor, isfinite
from libc.stdint cimport uint32_t, uint64_t


# -- messages --------------------------------------------------------------------------

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
            if _en_text(e, f, v, f.presence) < 0:
                return _EN_BAIL
        elif _en_field(e, f, v) < 0:
            return _EN_BAIL
    return 0


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
        if n < f.min_items:
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
        return _en_text(e, f, v, f.presence)
    if f.kind == _K_VALUE or f.kind == _K_STRUCT or f.kind == _K_MESSAGE:
        mark = _en_written(e)
        if f.kind == _K_VALUE:
            if (f.json_object and not capi.PyDict_CheckExact(v)) or _en_json(e, v, False) < 0:
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
        if i < f.minimum:
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
        if _en_extra(e, obj, sp.index, present, unmatched, sp.known):
            return _EN_BAIL
        return _en_fields(e, sp, slots, present, 0, &_en_plain)
    if sp.special == _SP_SOURCE:
        return _en_union(
            e, obj, sp.index, slots, present, unmatched, _SRC_TYPE, _en_source_types, _en_specs
        )
    if sp.special == _SP_PATCH:
        if (present >> _OP_SLOT) & 1 and capi.PyUnicode_Check(slots[_OP_SLOT]):
            if not capi.PyUnicode_CheckExact(slots[_OP_SLOT]):
                return _EN_BAIL
            r = _en_lookup(_en_ops, slots[_OP_SLOT])
            if r >= 0:
                required = _en_op_required[r]
        if _en_extra(e, obj, sp.index, present, unmatched, sp.known):
            return _EN_BAIL
        return _en_fields(e, sp, slots, present, required, &_en_plain)
    # _SP_CHAT: a known role; the keys its shape does not have are extra keys;
    # `content` rides the carrier its JSON type names, if the role allows it
    if not (present >> _MSG_ROLE) & 1 or not capi.PyUnicode_CheckExact(slots[_MSG_ROLE]):
        return _EN_BAIL
    r = _en_lookup(_en_role_index, slots[_MSG_ROLE])
    if r < 0:
        return _EN_BAIL
    role = &_en_roles[r]
    required = role.required
    content_required = role.content_required
    allowed = role.allowed
    unmatched += agw_popcount64(present & ~role.declared)
    present &= role.declared
    if _en_extra(e, obj, sp.index, present, unmatched, role.declared):
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


cdef inline bint _en_extra(
    _EnState* e, PyObject* obj, _EnTable* index, uint64_t present, Py_ssize_t unmatched,
    uint64_t known
) noexcept:
    """Whether the keys of ``obj`` the wire has no field for fail it: any, with
    extra_keys="error"; else one that is not a JSON value (proto_writer's
    check_extra: they are dropped, and must be what the SSE writer could write)."""
    if unmatched == 0 and (present & ~known) == 0:
        return False
    return e.extra_error or _en_check_extras(e, obj, index, known) < 0


cdef int _en_check_extras(_EnState* e, PyObject* obj, _EnTable* index, uint64_t known) noexcept:
    """BAIL unless every key of ``obj`` outside ``known`` has UTF-8 and a JSON value
    (written and dropped again: nothing of them stays in the frame)."""
    cdef Py_ssize_t pos = 0, n, mark
    cdef PyObject* k
    cdef PyObject* v
    cdef int slot, r
    while capi.PyDict_Next(obj, &pos, &k, &v):
        slot = _en_lookup(index, k)     # an exact str: _en_collect checked every key
        if slot >= 0 and (known >> slot) & 1:
            continue
        if agw_utf8(k, &n) == NULL:
            capi.PyErr_Clear()
            return _EN_BAIL
        mark = _en_written(e)
        r = _en_json(e, v, False)
        e.pos = e.end - mark
        if r < 0:
            return _EN_BAIL
    return 0


cdef inline int _en_union(
    _EnState* e, PyObject* obj, _EnTable* index, PyObject** slots, uint64_t present,
    Py_ssize_t unmatched, int type_slot, _EnTable* types, _EnSpec* arms
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
    if _en_extra(e, obj, index, present, unmatched, sp.known):
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
        if _en_union(e, part, _en_part_index, slots, present, unmatched, _PART_TYPE,
                     _en_part_types, _en_parts) < 0 \
                or _en_close(e, mark, tag) < 0:
            return _EN_BAIL
        e.nopen -= 1
    e.nopen -= 1
    return 0


# -- the event -------------------------------------------------------------------------

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
    if _en_extra(e, event, _en_event_index, present, unmatched, sp.known):
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
    if r < 0:
        return _EN_BAIL     # not an outcome type
    oc = &_en_outcomes[r]
    if oc.slot >= 0:
        known |= (<uint64_t>1) << oc.slot
        if (present >> oc.slot) & 1 and slots[oc.slot] != capi.Py_None:
            payload[0] = slots[oc.slot]
        elif oc.required:
            return _EN_BAIL
    if _en_extra(e, outcome, _en_outcome_index, present, unmatched, known):
        return _EN_BAIL
    spec[0] = oc
    return 0
