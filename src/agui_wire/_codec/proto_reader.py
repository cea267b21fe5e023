"""Pure-Python direct decoder: one ``ag_ui.Event`` payload -> event dict.

Strategy: read protobuf wire bytes directly, guided by ``agui_wire.schema``, and
build the JSON dict as ``@ag-ui/core`` would ``JSON.parse`` it. Each message is
scanned once into its occurrences per field number; protobuf semantics then decide
(last scalar wins, repeated fields append, repeated occurrences of a singular
message merge, a field with the wrong wire type is an unknown field). JSON values
are rebuilt top-down with an explicit stack, so nesting depth is limited by
``max_depth`` and not by Python's recursion limit.

A message body is a tuple of spans of the one payload buffer: one span normally,
one per occurrence when a singular message field occurs several times. Merging is
scanning those spans in order into one field table, as upb parses each occurrence
into the same message: nothing is copied (a copy per level would make a chain of
merged JSON values cost depth x size in time and memory), every occurrence must be
a well-formed message on its own (a field may not straddle two occurrences), and
error offsets stay offsets into the payload.

Contract: the reference behaviour of the Cython decoder in ``_proto_reader_*.pxi`` (five
parts, in this module's order; same dicts, same errors); the mapping rules are the
reference's (see docs/wire-format.md) except where it is lenient about broken bytes:
invalid UTF-8 is an error unless ``invalid_utf8="replace"``, and two different oneof
arms are an error, never a silent pick. Offsets in errors are relative to the
payload's first byte; the stream decoders move them to stream offsets. An event of a
later protocol (no known arm, only unknown message-shaped fields) raises
``UnknownEventError``; what to do with it is the stream decoder's policy, not this
module's.
"""

from __future__ import annotations

import struct
import warnings
from typing import Any, Final

from .._shapes import first_fault
from ..errors import (
    DecodeError,
    InvalidEvent,
    LimitExceeded,
    UnknownEventError,
    UnknownPartWarning,
)
from ..schema import (
    BASE_EVENT_NUMBER,
    BASE_FIELDS,
    BASE_TYPE_NUMBER,
    DEFAULT_MAX_DEPTH,
    EVENT_BY_ARM,
    EVENT_TYPES,
    EVENTS,
    KIND_WIRE_TYPE,
    LIST_VALUES,
    MAX_DEPTH_LIMIT,
    MESSAGE_CONTENT,
    MESSAGES,
    PART_ARMS,
    PATCH_OPS,
    ROLE_CONTENT,
    RUN_OUTCOME_NUMBER,
    RUN_OUTCOME_PAYLOAD,
    SOURCE_ARMS,
    STRUCT_FIELDS,
    STRUCT_KEY,
    STRUCT_VALUE,
    SUBAGENT_OUTCOME_NUMBER,
    SUBAGENT_OUTCOME_PAYLOAD,
    TOOL_RESULT_CONTENT,
    VALUE_LIST,
    VALUE_NULL,
    VALUE_NUMBER,
    VALUE_STRING,
    VALUE_STRUCT,
    VALUE_WIRE_TYPES,
    WIRE_LEN,
    WIRE_SGROUP,
    WIRE_VARINT,
    Field,
    Kind,
    MessageSpec,
    number_from_double,
)

__all__ = ["check_max_depth", "decode_payload", "refuse_invalid"]


def _payload_number(payload: tuple[str, int] | None) -> int:
    assert payload is not None
    return payload[1]


_unpack_double = struct.Struct("<d").unpack_from
_TYPE_BY_VALUE: Final = {EVENTS[t].type_value: t for t in EVENT_TYPES}
_PART_BY_ARM: Final = {arm: (ptype, name) for ptype, (arm, name) in PART_ARMS.items()}
_SOURCE_BY_ARM: Final = {arm: (stype, name) for stype, (arm, name) in SOURCE_ARMS.items()}
_PARTS_ROLES: Final = frozenset(r for r, c in ROLE_CONTENT.items() if "list" in c)
_MAP_ROLES: Final = frozenset(r for r, c in ROLE_CONTENT.items() if "dict" in c)
_BASE: Final = MessageSpec("BaseEvent", BASE_FIELDS)
# What head() says a Value holds: no kind, a scalar, or a container (whose code is
# the Value field it rides in, VALUE_STRUCT or VALUE_LIST).
_NO_KIND: Final = 0
_SCALAR: Final = 1
_CONTAINERS: Final = frozenset({VALUE_STRUCT, VALUE_LIST})
assert not _CONTAINERS & {_NO_KIND, _SCALAR}
_VALUE_WIRE_TYPE: Final = dict(VALUE_WIRE_TYPES)  # a plain dict: read per field
# the field of a Struct (its map entries) or ListValue (its values)
_ENTRY_NUMBER: Final = {VALUE_STRUCT: STRUCT_FIELDS, VALUE_LIST: LIST_VALUES}
_RUN_IDS: Final = _payload_number(RUN_OUTCOME_PAYLOAD["success"])
_RUN_INTERRUPTS: Final = _payload_number(RUN_OUTCOME_PAYLOAD["interrupt"])
_SUBAGENT_IDS: Final = _payload_number(SUBAGENT_OUTCOME_PAYLOAD["suspended"])
# the `source` field of each content part that has one
_PART_SOURCE: Final = {
    ptype: f.number
    for ptype, (_, name) in PART_ARMS.items()
    for f in MESSAGES[name].fields
    if f.name == "source"
}

# An occurrence of a field: (wire_type, value, offset). value is an int for
# varints, (start, end) into the buffer for length-delimited fields, and the raw
# bytes for fixed64/fixed32.
_Occ = tuple[int, Any, int]
# A message body: the spans of its occurrences, in wire order.
_Spans = tuple[tuple[int, int], ...]


def check_max_depth(max_depth: int) -> int:
    """``max_depth`` if it is valid, else ``ValueError`` (bool is not an int here)."""
    if type(max_depth) is not int or not 1 <= max_depth <= MAX_DEPTH_LIMIT:
        raise ValueError(f"max_depth must be an int in 1..{MAX_DEPTH_LIMIT}, not {max_depth!r}")
    return max_depth


def read_varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """The varint at ``pos`` (before ``end``) and the position after it. At most
    10 bytes, and no bits past 64: upb and the reference drop those silently, but
    no encoder writes them, so here they are corrupt bytes (docs/errors.md)."""
    result = shift = 0
    start = pos
    while True:
        if pos >= end:
            raise DecodeError("truncated varint", offset=start)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            if shift == 63 and b > 1:
                raise DecodeError("varint overflows 64 bits", offset=start)
            return result, pos
        shift += 7
        if shift > 63:
            raise DecodeError("varint longer than 10 bytes", offset=start)


def read_field(buf: bytes, at: int, end: int) -> tuple[int, int, Any, int]:
    """The field whose tag starts at ``at`` (its message ends at ``end``):
    ``(number, wire_type, value, next_position)``. ``value`` is an int for a
    varint, ``(start, end)`` for a length-delimited field, the raw bytes for
    fixed64/fixed32, ``None`` for a group (skipped: groups are never AG-UI
    fields). Every wire-level refusal of the decoders is raised here."""
    tag, pos = read_varint(buf, at, end)
    if tag > 0xFFFFFFFF:
        raise DecodeError("field tag overflows 32 bits", offset=at)
    number, wt = tag >> 3, tag & 7
    if number == 0:
        raise DecodeError("field number 0 is not valid", offset=at)
    value: Any
    if wt == 0:
        value, pos = read_varint(buf, pos, end)
    elif wt == 2:
        length, pos = read_varint(buf, pos, end)
        if length > end - pos:
            raise DecodeError(
                f"field {number} declares {length} bytes, {end - pos} remain", offset=at
            )
        value = (pos, pos + length)
        pos += length
    elif wt == 1:
        if end - pos < 8:
            raise DecodeError(f"field {number}: truncated fixed64", offset=at)
        value = buf[pos : pos + 8]
        pos += 8
    elif wt == 5:
        if end - pos < 4:
            raise DecodeError(f"field {number}: truncated fixed32", offset=at)
        value = buf[pos : pos + 4]
        pos += 4
    elif wt == 3:
        value = None
        pos = skip_group(buf, number, pos, end, at, [number])
    else:
        raise DecodeError(f"wire type {wt} of field {number} is not valid here", offset=at)
    return number, wt, value, pos


def skip_group(buf: bytes, number: int, pos: int, end: int, at: int, open_groups: list[int]) -> int:
    """Skip a (legacy) group ``number`` whose start tag is at ``at``, from ``pos``
    up to the end tag that closes ``open_groups`` (innermost last). The Cython
    decoder resumes here at the step it refused, with the innermost group open,
    to have its error told in these words."""
    while open_groups:
        if pos >= end:
            raise DecodeError(f"group {number} is not closed", offset=at)
        tag_at = pos
        tag, pos = read_varint(buf, pos, end)
        if tag > 0xFFFFFFFF:
            raise DecodeError("field tag overflows 32 bits", offset=tag_at)
        n, wt = tag >> 3, tag & 7
        if n == 0:
            raise DecodeError("field number 0 is not valid", offset=tag_at)
        if wt == 0:
            _, pos = read_varint(buf, pos, end)
        elif wt == 1:
            pos += 8
        elif wt == 2:
            length, pos = read_varint(buf, pos, end)
            pos += length
        elif wt == 5:
            pos += 4
        elif wt == 3:
            open_groups.append(n)
        elif wt == 4:
            if open_groups.pop() != n:
                raise DecodeError(f"end of group {n} does not match its start", offset=tag_at)
        else:
            raise DecodeError(f"wire type {wt} of field {n} is not valid here", offset=tag_at)
        if pos > end:
            raise DecodeError(f"group {number} runs past the end of its message", offset=at)
    return pos


# -- the refusals past the wire level, each worded once -----------------------------
# The pure decoder raises them where it finds the fault; the Cython decoder finds
# the same fault in the same order and has the same function word it
# (``fault_error``), so no failing frame is decoded twice.


def utf8_error(buf: bytes, start: int, end: int) -> DecodeError | None:
    """The error for the string ``buf[start:end]`` if it is not valid UTF-8."""
    try:
        buf[start:end].decode("utf-8")
    except UnicodeDecodeError as exc:
        return DecodeError(
            "string is not valid UTF-8 (pass invalid_utf8='replace' to substitute U+FFFD)",
            offset=start + exc.start,
        )
    return None


def too_deep(max_depth: int, at: int) -> LimitExceeded:
    return LimitExceeded(f"JSON value nested deeper than max_depth={max_depth}", offset=at)


_ONEOF_WHAT: Final = ("the event envelope", "a content part", "a content part source")


def two_arms(which: int, numbers: list[int], at: int) -> DecodeError:
    """Two different arms of a oneof (``which`` indexes ``_ONEOF_WHAT``); ``at``
    is the first occurrence of the second lowest arm number."""
    listed = ", ".join(str(n) for n in numbers)
    return DecodeError(
        f"{_ONEOF_WHAT[which]} carries more than one arm (fields {listed})", offset=at
    )


def no_known_arm(
    arm_wire_type: tuple[int, int, int] | None, unknown: list[tuple[int, bytes]]
) -> DecodeError:
    """A frame with no arm of this version: an arm number with another wire type
    (``(number, wire_type, at)`` of the lowest such field, first occurrence) is
    broken bytes; else, if some unknown field is a well-formed message, an event
    of a later protocol (``unknown``: those fields in wire order); else no event."""
    if arm_wire_type is not None:
        number, wt, at = arm_wire_type
        return DecodeError(f"event arm {number} has wire type {wt}, not a message", offset=at)
    if unknown:
        fields = tuple(sorted(unknown, key=lambda f: f[0]))  # stable: wire order per number
        return UnknownEventError(
            "frame carries only event arms this AG-UI version does not know "
            f"(fields {', '.join(str(n) for n, _ in fields)})",
            fields=fields,
            offset=0,
        )
    return DecodeError("frame carries no event", offset=0)


def no_base_event(arm: int, at: int) -> DecodeError:
    return DecodeError(f"{EVENT_BY_ARM[arm].type} has no base_event", offset=at)


def type_mismatch(arm: int, declared: int, at: int) -> DecodeError:
    return DecodeError(
        f"envelope carries {EVENT_BY_ARM[arm].type} but the base event declares "
        f"{_TYPE_BY_VALUE.get(declared, declared)}",
        offset=at,
    )


def content_forms(
    role: str, text_at: int | None, parts_at: int | None, activity_at: int | None
) -> tuple[bool, bool]:
    """``(uses_parts, uses_map)`` of a ``Message`` of ``role`` whose string content,
    content parts and activity content start at these offsets (``None``: absent):
    its role says which one it may carry (an unknown role, whichever single one is
    there); a carrier the role cannot have is a ``DecodeError``."""
    if role in ROLE_CONTENT:
        uses_parts = role in _PARTS_ROLES
        uses_map = role in _MAP_ROLES
        if parts_at is not None and not uses_parts:
            raise DecodeError(
                f"a {role!r} message carries content parts, which its role has none of",
                offset=parts_at,
            )
        if activity_at is not None and not uses_map:
            raise DecodeError(f"a {role!r} message carries activity content", offset=activity_at)
        if uses_map and text_at is not None:
            raise DecodeError("an activity message carries string content", offset=text_at)
        if uses_parts and text_at is not None and parts_at is not None:
            raise DecodeError(
                "a message carries both string content and content parts", offset=parts_at
            )
        return uses_parts, uses_map
    present = [at for at in (text_at, parts_at, activity_at) if at is not None]
    if len(present) > 1:
        raise DecodeError(
            f"a message of unknown role {role!r} carries more than one content form",
            offset=present[0],
        )
    uses_parts = parts_at is not None
    return uses_parts, not uses_parts and activity_at is not None


def tool_result_both(at: int) -> DecodeError:
    return DecodeError("TOOL_CALL_RESULT carries both string content and content parts", offset=at)


# Fault codes of the Cython decoder (it reads them from here).
FAULT_NONE: Final = 0  # none recorded (memory, odd input): decode again in Python
FAULT_WIRE: Final = 1  # (at, end): the field at `at` does not parse
FAULT_GROUP: Final = 2  # (number, at, pos, end, innermost): inside a group
FAULT_UTF8: Final = 3  # (start, end): a string
FAULT_DEPTH: Final = 4  # (at,): a container past max_depth
FAULT_EMPTY: Final = 5  # ()
FAULT_ONEOF: Final = 6  # (which, arms bit mask, at)
FAULT_NO_ARM: Final = 7  # (arm_wire_type, unknown): see no_known_arm
FAULT_NO_BASE: Final = 8  # (arm, at)
FAULT_TYPE: Final = 9  # (arm, declared, at)
FAULT_CONTENT: Final = 10  # (role, text_at, parts_at, activity_at)
FAULT_TOOL_RESULT: Final = 11  # (at,)


def fault_error(buf: bytes, max_depth: int, code: int, *args: Any) -> DecodeError | None:
    """The error for a fault the Cython decoder located (codes above; offsets from
    the payload's first byte); ``None`` if these words do not refuse it, when the
    caller decodes the payload in Python instead (a safety net: it never happens
    on any input the tests know)."""
    try:
        if code == FAULT_WIRE:
            read_field(buf, args[0], args[1])
        elif code == FAULT_GROUP:
            number, at, pos, end, innermost = args
            skip_group(buf, number, pos, end, at, [innermost])
        elif code == FAULT_UTF8:
            return utf8_error(buf, args[0], args[1])
        elif code == FAULT_DEPTH:
            return too_deep(max_depth, args[0])
        elif code == FAULT_EMPTY:
            return DecodeError("empty frame: no event")
        elif code == FAULT_ONEOF:
            which, mask, at = args
            return two_arms(which, [n for n in range(64) if mask >> n & 1], at)
        elif code == FAULT_NO_ARM:
            return no_known_arm(args[0], args[1])
        elif code == FAULT_NO_BASE:
            return no_base_event(args[0], args[1])
        elif code == FAULT_TYPE:
            return type_mismatch(args[0], args[1], args[2])
        elif code == FAULT_CONTENT:
            content_forms(*args)
        elif code == FAULT_TOOL_RESULT:
            return tool_result_both(args[0])
    except DecodeError as exc:
        return exc
    return None


class _Frame:
    """An open JSON container being filled (``target``; ``None`` when it is only
    validated: a container a later kind of its Value replaced), read one field at
    a time from its spans. The Cython decoder's frame stack, step for step."""

    __slots__ = ("end", "i", "kind", "level", "pos", "spans", "target")

    def __init__(self, target: Any, kind: int, spans: _Spans, level: int) -> None:
        self.target = target
        self.kind = kind  # VALUE_STRUCT or VALUE_LIST
        self.spans = spans
        self.i = 1
        self.pos, self.end = spans[0]
        self.level = level  # its nesting (root = 1)


class _Reader:
    __slots__ = ("buf", "max_depth", "utf8_errors", "warnings")

    def __init__(self, buf: bytes, utf8_errors: str, max_depth: int) -> None:
        self.buf = buf
        self.utf8_errors = utf8_errors
        self.max_depth = max_depth
        # issued after a successful decode: a frame that is refused warns nothing
        self.warnings: list[str] = []

    # -- wire level ----------------------------------------------------------------

    def scan(self, spans: _Spans) -> dict[int, list[_Occ]]:
        """Every field of the message whose occurrences are ``spans``, by field
        number (occurrences of several spans merge, in order)."""
        fields: dict[int, list[_Occ]] = {}
        buf = self.buf
        for pos, end in spans:
            while pos < end:
                at = pos
                number, wt, value, pos = read_field(buf, at, end)
                if wt == WIRE_SGROUP:
                    continue  # a group: unknown, skipped
                occ = fields.get(number)
                if occ is None:
                    fields[number] = [(wt, value, at)]
                else:
                    occ.append((wt, value, at))
        return fields

    def text(self, span: tuple[int, int]) -> str:
        start, end = span
        try:
            return self.buf[start:end].decode("utf-8", self.utf8_errors)
        except UnicodeDecodeError:
            error = utf8_error(self.buf, start, end)
            assert error is not None
            raise error from None

    @staticmethod
    def spans(occs: list[_Occ]) -> _Spans:
        """The body of a singular message field: all its occurrences, merged."""
        return tuple(o[1] for o in occs)

    # -- field values ----------------------------------------------------------------

    def put_fields(
        self, spec: MessageSpec, fields: dict[int, list[_Occ]], out: dict[str, Any]
    ) -> None:
        """Set the 1:1 JSON keys of ``spec`` in ``out`` from the scanned ``fields``."""
        for f in spec.fields:
            occs = fields.get(f.number)
            wanted = KIND_WIRE_TYPE[f.kind]
            if occs is not None:
                occs = [o for o in occs if o[0] == wanted]
            if not occs:
                if f.repeated:
                    if not f.omit_empty:
                        out[f.name] = []
                elif not f.presence:
                    out[f.name] = _DEFAULTS[f.kind]
                continue
            value = self.field_value(f, occs)
            if value is not _ABSENT:
                out[f.name] = value

    def field_value(self, f: Field, occs: list[_Occ]) -> Any:
        kind = f.kind
        if f.repeated:
            if kind == Kind.STRING:
                return [self.text(span) for _, span, _ in occs]
            assert f.message is not None
            return [self.message(f.message, [o]) for o in occs]
        if kind == Kind.STRING:
            return self.last_text(occs)
        if kind == Kind.INT64:
            v = occs[-1][1] & 0xFFFFFFFFFFFFFFFF
            return v - (1 << 64) if v >= 1 << 63 else v
        if kind == Kind.BOOL:
            return occs[-1][1] != 0
        if kind == Kind.PATCH_OP:
            v = occs[-1][1] & 0xFFFFFFFF
            v = v - (1 << 32) if v >= 1 << 31 else v
            return PATCH_OPS[v] if 0 <= v < len(PATCH_OPS) else str(v)
        if kind == Kind.VALUE:
            return self.value(self.spans(occs))
        if kind == Kind.STRUCT:
            return self.struct(self.spans(occs))
        assert f.message is not None
        return self.message(f.message, occs)

    def message(self, name: str, occs: list[_Occ]) -> Any:
        """A nested message as JSON, or ``_ABSENT`` when the JSON drops it
        (a content part or source of a kind this version does not know)."""
        fields = self.scan(self.spans(occs))
        if name == "Message":
            return self.chat_message(fields)
        if name == "InputContent":
            return self.content_part(fields)
        if name == "InputContentSource":
            return self.source(fields)
        out: dict[str, Any] = {}
        self.put_fields(MESSAGES[name], fields, out)
        return out

    # -- JSON values -------------------------------------------------------------------
    # google.protobuf.Value / Struct / ListValue, rebuilt top-down with an explicit
    # stack of _Frames: no recursion, whatever the nesting. A Value's kinds are
    # merged as protobuf merges them (a later kind replaces an earlier one; a run
    # of struct/list occurrences of the last kind merges); what is replaced is
    # still checked: a string is decoded at once, a container is pushed as a frame
    # without a target and walked after the value that replaced it.

    def head(self, spans: _Spans, level: int, stack: list[_Frame]) -> tuple[int, Any]:
        """What a ``Value`` body holds: (_NO_KIND, None); (_SCALAR, scalar);
        (VALUE_STRUCT, spans) a Struct body; (VALUE_LIST, spans) a ListValue body.
        ``level``: the nesting of the container the Value sits in (0 at the top)."""
        buf = self.buf
        kinds: list[tuple[int, Any, int]] = []
        for pos, end in spans:
            while pos < end:
                at = pos
                number, wt, value, pos = read_field(buf, at, end)
                if wt == _VALUE_WIRE_TYPE.get(number):
                    kinds.append((number, value, at))
        if not kinds:
            return _NO_KIND, None
        last, value, _ = kinds[-1]
        run = len(kinds) - 1
        if last in _CONTAINERS:
            while run > 0 and kinds[run - 1][0] == last:
                run -= 1
        for number, replaced, where in kinds[:run]:
            if number == VALUE_STRING:
                self.text(replaced)
            elif number in _CONTAINERS:
                if level + 1 > self.max_depth:
                    raise too_deep(self.max_depth, where)
                stack.append(_Frame(None, number, (replaced,), level + 1))
        if last in _CONTAINERS:
            return last, tuple(v for _, v, _ in kinds[run:])
        if last == VALUE_NULL:
            return _SCALAR, None
        if last == VALUE_NUMBER:
            return _SCALAR, _number(value)
        if last == VALUE_STRING:
            return _SCALAR, self.text(value)
        return _SCALAR, value != 0  # VALUE_BOOL

    def entry(
        self, span: tuple[int, int], level: int, stack: list[_Frame]
    ) -> tuple[str, tuple[int, Any]]:
        """A ``Struct`` map entry: its key (the last wins, every one is checked) and
        the head of its value (occurrences merged)."""
        buf = self.buf
        pos, end = span
        keys: list[tuple[int, int]] = []
        values: list[tuple[int, int]] = []
        while pos < end:
            number, wt, value, pos = read_field(buf, pos, end)
            if wt == WIRE_LEN:
                if number == STRUCT_KEY:
                    keys.append(value)
                elif number == STRUCT_VALUE:
                    values.append(value)
        key = ""
        if keys:
            for k in keys[:-1]:
                self.text(k)
            key = self.text(keys[-1])
        if not values:
            return key, (_NO_KIND, None)
        return key, self.head(tuple(values), level, stack)

    def run(self, stack: list[_Frame]) -> None:
        """Fill the open containers until the stack is empty."""
        buf = self.buf
        max_depth = self.max_depth
        while stack:
            f = stack[-1]
            if f.pos >= f.end:
                if f.i < len(f.spans):  # the next occurrence of a merged container
                    f.pos, f.end = f.spans[f.i]
                    f.i += 1
                    continue
                stack.pop()
                continue
            at = f.pos
            number, wt, value, f.pos = read_field(buf, at, f.end)
            if wt != WIRE_LEN or number != (
                STRUCT_FIELDS if f.kind == VALUE_STRUCT else LIST_VALUES
            ):
                continue  # not an entry/element: unknown, skipped
            kind, level, target = f.kind, f.level, f.target
            key = ""
            if kind == VALUE_STRUCT:
                key, (hkind, payload) = self.entry(value, level, stack)
            else:
                hkind, payload = self.head((value,), level, stack)
            container = hkind in _CONTAINERS
            if container and level >= max_depth:
                raise too_deep(max_depth, at)
            if target is None:
                if container:
                    stack.append(_Frame(None, hkind, payload, level + 1))
                continue
            child: Any = None
            if container:
                child = {} if hkind == VALUE_STRUCT else []
            if kind == VALUE_STRUCT:
                if hkind == _NO_KIND:
                    target.pop(key, None)  # a Value with no kind is undefined in JSON
                else:
                    target[key] = payload if hkind == _SCALAR else child
            else:
                target.append(child if container else payload)
            if child is not None:
                stack.append(_Frame(child, hkind, payload, level + 1))

    def value(self, spans: _Spans) -> Any:
        stack: list[_Frame] = []
        kind, payload = self.head(spans, 0, stack)
        if kind == _NO_KIND:
            result: Any = _ABSENT
        elif kind == _SCALAR:
            result = payload
        else:
            result = {} if kind == VALUE_STRUCT else []
            stack.append(_Frame(result, kind, payload, 1))
        self.run(stack)
        return result

    def struct(self, spans: _Spans) -> dict[str, Any]:
        result: dict[str, Any] = {}
        self.run([_Frame(result, VALUE_STRUCT, spans, 1)])
        return result

    # -- the special shapes ----------------------------------------------------------

    def oneof(
        self, fields: dict[int, list[_Occ]], arms: Any, which: int
    ) -> tuple[int, list[_Occ]] | None:
        present = [
            (n, [o for o in fields[n] if o[0] == WIRE_LEN]) for n in sorted(fields) if n in arms
        ]
        present = [(n, occs) for n, occs in present if occs]
        if len(present) > 1:
            raise two_arms(which, [n for n, _ in present], present[1][1][0][2])
        return present[0] if present else None

    def source(self, fields: dict[int, list[_Occ]]) -> Any:
        arm = self.oneof(fields, _SOURCE_BY_ARM, 2)
        if arm is None:
            return _ABSENT
        stype, name = _SOURCE_BY_ARM[arm[0]]
        out: dict[str, Any] = {"type": stype}
        self.put_fields(MESSAGES[name], self.scan(self.spans(arm[1])), out)
        return out

    def content_part(self, fields: dict[int, list[_Occ]]) -> Any:
        arm = self.oneof(fields, _PART_BY_ARM, 1)
        if arm is None:
            self.warnings.append(
                "dropped a content part of a kind this AG-UI version does not know"
            )
            return _ABSENT
        ptype, name = _PART_BY_ARM[arm[0]]
        out: dict[str, Any] = {"type": ptype}
        body = self.scan(self.spans(arm[1]))
        self.put_fields(MESSAGES[name], body, out)
        source = _PART_SOURCE.get(ptype)
        if (
            source is not None
            and "source" not in out
            and any(o[0] == WIRE_LEN for o in body.get(source, ()))
        ):
            # the source names no kind this version knows: the part cannot be
            # represented, and the reference drops it too
            self.warnings.append(
                f"dropped a {ptype} content part whose source is of an unknown kind"
            )
            return _ABSENT
        return out

    def parts(self, occs: list[_Occ]) -> list[Any]:
        items = (self.message("InputContent", [o]) for o in occs if o[0] == WIRE_LEN)
        return [p for p in items if p is not _ABSENT]

    def chat_message(self, fields: dict[int, list[_Occ]]) -> dict[str, Any]:
        """The union ``Message`` back to its role's JSON: ``content`` comes from
        the carrier (MESSAGE_CONTENT) ``content_forms`` says."""
        out: dict[str, Any] = {}
        self.put_fields(MESSAGES["Message"], fields, out)
        text = self.occurrences(fields, MESSAGE_CONTENT["str"])
        parts = self.occurrences(fields, MESSAGE_CONTENT["list"])
        activity = self.occurrences(fields, MESSAGE_CONTENT["dict"])
        uses_parts, uses_map = content_forms(
            out["role"],
            text[0][2] if text else None,
            parts[0][2] if parts else None,
            activity[0][2] if activity else None,
        )
        if text:
            out["content"] = self.last_text(text)
        elif uses_parts:
            out["content"] = self.parts(parts)
        elif uses_map and activity:
            out["content"] = self.struct(self.spans(activity))
        return out

    # -- the event -------------------------------------------------------------------

    def event(self) -> dict[str, Any]:
        end = len(self.buf)
        if end == 0:
            raise DecodeError("empty frame: no event")
        fields = self.scan(((0, end),))
        arm = self.oneof(fields, EVENT_BY_ARM, 0)
        if arm is None:
            raise self.no_known_arm(fields)
        spec = EVENT_BY_ARM[arm[0]]
        at = arm[1][0][2]
        body = self.scan(self.spans(arm[1]))
        base_occs = self.occurrences(body, BASE_EVENT_NUMBER)
        if not base_occs:
            raise no_base_event(arm[0], at)
        base = self.scan(self.spans(base_occs))
        type_occs = self.occurrences(base, BASE_TYPE_NUMBER, WIRE_VARINT)
        declared = type_occs[-1][1] & 0xFFFFFFFF if type_occs else 0
        if declared >= 1 << 31:
            declared -= 1 << 32
        if declared != spec.type_value:
            raise type_mismatch(
                arm[0], declared, type_occs[-1][2] if type_occs else base_occs[0][2]
            )
        out: dict[str, Any] = {"type": spec.type}
        self.put_fields(spec.message, body, out)
        if spec.type == "RUN_FINISHED":
            self.run_outcome(body, out)
        elif spec.type == "SUBAGENT_FINISHED":
            self.subagent_outcome(body, out)
        elif spec.type == "TOOL_CALL_RESULT":
            self.tool_result_content(body, out)
        self.put_fields(_BASE, base, out)
        return out

    def no_known_arm(self, fields: dict[int, list[_Occ]]) -> DecodeError:
        """No arm of this version (see ``no_known_arm``)."""
        unknown: list[tuple[int, bytes]] = []
        for number, occs in sorted(fields.items()):
            for wt, value, at in occs:
                if number in EVENT_BY_ARM:
                    return no_known_arm((number, wt, at), [])
                if wt == WIRE_LEN and self.walks(*value):
                    unknown.append((number, self.buf[value[0] : value[1]]))
        return no_known_arm(None, unknown)

    def walks(self, start: int, end: int) -> bool:
        try:
            self.scan(((start, end),))
        except DecodeError:
            return False
        return True

    def run_outcome(self, body: dict[int, list[_Occ]], out: dict[str, Any]) -> None:
        """RUN_FINISHED: the outcome string and its payload lists back into the
        ``outcome`` object; with no outcome the lists stay top-level (pre-1.0)."""
        outcome = self.string_field(body, RUN_OUTCOME_NUMBER)
        pending = [self.text(v) for _, v, _ in self.occurrences(body, _RUN_IDS)]
        interrupts = [
            self.message("Interrupt", [o]) for o in self.occurrences(body, _RUN_INTERRUPTS)
        ]
        if not outcome:
            if pending:
                out["pendingToolCallIds"] = pending
            if interrupts:
                out["interrupts"] = interrupts
            return
        result: dict[str, Any] = {"type": outcome}
        if outcome == "interrupt":
            result["interrupts"] = interrupts
            if pending:
                result["pendingToolCallIds"] = pending
        else:
            if pending:
                result["pendingToolCallIds"] = pending
            if interrupts:
                result["interrupts"] = interrupts
        out["outcome"] = result

    def subagent_outcome(self, body: dict[int, list[_Occ]], out: dict[str, Any]) -> None:
        outcome = self.string_field(body, SUBAGENT_OUTCOME_NUMBER)
        ids = [self.text(v) for _, v, _ in self.occurrences(body, _SUBAGENT_IDS)]
        if not outcome:
            if ids:
                out["interruptIds"] = ids
            return
        result: dict[str, Any] = {"type": outcome}
        if ids:
            result["interruptIds"] = ids
        out["outcome"] = result

    def tool_result_content(self, body: dict[int, list[_Occ]], out: dict[str, Any]) -> None:
        text = self.occurrences(body, TOOL_RESULT_CONTENT["str"])
        parts = self.occurrences(body, TOOL_RESULT_CONTENT["list"])
        if text and parts:
            raise tool_result_both(parts[0][2])
        out["content"] = self.last_text(text) if text else self.parts(parts)

    def last_text(self, occs: list[_Occ]) -> str:
        """The last occurrence wins, but every one must be valid UTF-8 (as upb
        checks every occurrence it parses)."""
        for _, span, _ in occs[:-1]:
            self.text(span)
        return self.text(occs[-1][1])

    def string_field(self, body: dict[int, list[_Occ]], number: int) -> str:
        occs = self.occurrences(body, number)
        return self.last_text(occs) if occs else ""

    @staticmethod
    def occurrences(
        body: dict[int, list[_Occ]], number: int, wire_type: int = WIRE_LEN
    ) -> list[_Occ]:
        """The occurrences of field ``number`` with ``wire_type`` (others are unknown)."""
        return [o for o in body.get(number, ()) if o[0] == wire_type]


class _Absent:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<absent>"


_ABSENT: Final = _Absent()
_DEFAULTS: Final = {Kind.STRING: "", Kind.INT64: 0, Kind.BOOL: False, Kind.PATCH_OP: "add"}


def _number(raw: bytes) -> int | float:
    x: float = _unpack_double(raw)[0]
    return number_from_double(x)


def decode_payload(
    data: bytes | bytearray | memoryview,
    *,
    invalid_utf8: str = "error",
    max_depth: int = DEFAULT_MAX_DEPTH,
    invalid_events: str = "raise",
) -> dict[str, Any]:
    """Decode one serialized ``ag_ui.Event`` (a frame's payload) to its JSON dict;
    ``InvalidEvent`` for an event ``@ag-ui/core``'s schemas reject (what the wire
    can say wrong: a word outside its enum, a patch path that is no JSON pointer, a
    count below 0...), unless ``invalid_events="keep"``."""
    if invalid_utf8 not in ("error", "replace"):
        raise ValueError(f"invalid_utf8 must be 'error' or 'replace', not {invalid_utf8!r}")
    if invalid_events not in ("raise", "keep"):
        raise ValueError(f"invalid_events must be 'raise' or 'keep', not {invalid_events!r}")
    check_max_depth(max_depth)
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"expected bytes, bytearray or memoryview, not {type(data).__name__}")
    buf = data if isinstance(data, bytes) else bytes(data)
    errors = "strict" if invalid_utf8 == "error" else "replace"
    reader = _Reader(buf, errors, max_depth)
    try:
        out = reader.event()
    except LimitExceeded:
        if max_depth < MAX_DEPTH_LIMIT:
            raise_other_fault(lambda: _Reader(buf, errors, MAX_DEPTH_LIMIT).event())
        raise
    for text in reader.warnings:
        warnings.warn(text, UnknownPartWarning, stacklevel=2)
    if invalid_events == "raise":
        refuse_invalid(out)
    return out


def refuse_invalid(event: dict[str, Any]) -> None:
    """``InvalidEvent`` (no position: a payload has none beyond its bytes) for a
    decoded event ``@ag-ui/core``'s schemas reject, in ``_shapes.first_fault``'s
    words; the Cython twin calls it for an event its own check refused."""
    fault = first_fault(event)
    if fault is not None:
        raise InvalidEvent(
            fault.message, path=fault.path, event_type=event.get("type"), event=event
        )


def raise_other_fault(decode_at_max_depth: Any) -> None:
    """``LimitExceeded`` is for a frame that would decode with a higher limit; if
    the frame has another fault too, that one is raised instead, whichever a
    decoder happened to meet first. ``decode_at_max_depth`` decodes the frame again
    at ``MAX_DEPTH_LIMIT`` (the upb path does the same, so every decoder gives the
    same class); only an error path pays for it, and it is linear too."""
    try:
        decode_at_max_depth()
    except LimitExceeded:
        return
    except DecodeError as other:
        raise other from None
