# Cython twin of proto_writer.py, part 5 of 5: the C tables the other parts read
# (proto_writer's _FIELD_BY_NAME, _PATCH_OP_VALUE, _BASE_SPEC, the key sets), built
# from agui_wire.schema once, at import; _en_init raises ImportError where the schema
# is not what the C code assumes (strategy: _proto_writer_wire.pxi).

from libc.stdint cimport uint32_t, uint64_t
from libc.stdlib cimport malloc

import sys as _en_sys
from operator import attrgetter as _en_attrgetter

from agui_wire._codec import seam as _seam


# -- the tables ------------------------------------------------------------------------

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


# -- built from agui_wire.schema -------------------------------------------------------

cdef uint32_t _en_wire_type(int kind) except? 0:
    if kind >= _K_CONTENT_STR:
        return _seam.schema.WIRE_LEN     # every carrier is length-delimited
    return _seam.schema.KIND_WIRE_TYPE[_seam.schema.Kind(kind)]


cdef unsigned char _en_tag1(int number, int wire_type) except? 0:
    # A tag the writer stores as one byte.
    cdef int tag = (number << 3) | wire_type
    if not 0 < tag < 0x80:
        raise ImportError(f"agui_wire._fast: tag {tag:#x} is not one byte, as the encoder writes it")
    return <unsigned char>tag


cdef tuple _en_with(object fields, object carriers):
    """`fields` and the carriers of a special shape ((number, kind, JSON key) each,
    as fields whose kind says what they write), ascending by number."""
    extra = [_seam.schema.Field(key, number, kind) for number, kind, key in carriers]
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
    if f.kind < _K_CONTENT_STR and f.kind not in _seam.schema.KIND_WIRE_TYPE:
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
    sc = _seam.schema
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
