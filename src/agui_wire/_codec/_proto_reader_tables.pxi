# Cython twin of proto_reader.py, part 5 of 5: the C tables the other parts read, built
# from agui_wire.schema once, at import; _de_init raises ImportError where the schema
# is not what the C code assumes (strategy: _proto_reader_wire.pxi).

import sys as _de_sys

from agui_wire._codec import seam as _seam


# -- the tables ------------------------------------------------------------------------

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


# -- built from agui_wire.schema -------------------------------------------------------

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
    defaults = _seam.KIND_DEFAULTS
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
        if fd.kind not in _seam.schema.KIND_WIRE_TYPE or (
            f.repeated and fd.kind not in (_K_STRING, _K_MESSAGE)
        ):
            raise ImportError(f"agui_wire._fast: {f.name}: a field kind the decoder has no code for")
        wt = _seam.schema.KIND_WIRE_TYPE[f.kind]
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
    sc = _seam.schema
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
