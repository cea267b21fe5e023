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

Contract: the reference behaviour of the Cython decoder in ``_proto_reader.pxi`` (same
dicts, same errors); the mapping rules are the reference's (see docs/wire-format.md)
except where it is lenient about broken bytes: invalid UTF-8 is an error unless
``invalid_utf8="replace"``, and two different oneof arms are an error, never a
silent pick. Offsets in errors are relative to the payload's first byte; the
stream decoders move them to stream offsets. An event of a later protocol (no
known arm, only unknown message-shaped fields) raises ``UnknownEventError``; what
to do with it is the stream decoder's policy, not this module's.
"""

from __future__ import annotations

import struct
import warnings
from typing import Any, Final

from ..errors import DecodeError, LimitExceeded, UnknownEventError, UnknownPartWarning
from ..schema import (
    BASE_FIELDS,
    EVENT_BY_ARM,
    EVENT_TYPES,
    EVENTS,
    MESSAGES,
    PART_ARMS,
    PATCH_OPS,
    ROLE_CONTENT,
    SOURCE_ARMS,
    Field,
    Kind,
    MessageSpec,
    number_from_double,
)

__all__ = ["DEFAULT_MAX_DEPTH", "MAX_DEPTH_LIMIT", "check_max_depth", "decode_payload"]

DEFAULT_MAX_DEPTH: Final = 1024  # JSON nesting levels (objects + arrays)
MAX_DEPTH_LIMIT: Final = 10_000

_unpack_double = struct.Struct("<d").unpack_from
_TYPE_BY_VALUE: Final = {EVENTS[t].type_value: t for t in EVENT_TYPES}
_PART_BY_ARM: Final = {arm: (ptype, name) for ptype, (arm, name) in PART_ARMS.items()}
_SOURCE_BY_ARM: Final = {arm: (stype, name) for stype, (arm, name) in SOURCE_ARMS.items()}
_PARTS_ROLES: Final = frozenset(r for r, c in ROLE_CONTENT.items() if "list" in c)
_MAP_ROLES: Final = frozenset(r for r, c in ROLE_CONTENT.items() if "dict" in c)
_BASE: Final = MessageSpec("BaseEvent", BASE_FIELDS)

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


class _Reader:
    __slots__ = ("buf", "max_depth", "quiet", "utf8_errors")

    def __init__(self, buf: bytes, utf8_errors: str, max_depth: int, quiet: bool = False) -> None:
        self.buf = buf
        self.utf8_errors = utf8_errors
        self.max_depth = max_depth
        self.quiet = quiet  # no warnings: a second pass over a frame already warned about

    # -- wire level ----------------------------------------------------------------

    def scan(self, spans: _Spans) -> dict[int, list[_Occ]]:
        """Every field of the message whose occurrences are ``spans``, by field
        number (occurrences of several spans merge, in order)."""
        fields: dict[int, list[_Occ]] = {}
        for start, end in spans:
            self.scan_span(start, end, fields)
        return fields

    def scan_span(self, start: int, end: int, fields: dict[int, list[_Occ]]) -> None:
        """Add the fields of the message bytes ``buf[start:end]`` to ``fields``."""
        pos = start
        while pos < end:
            at = pos
            tag, pos = read_varint(self.buf, pos, end)
            if tag > 0xFFFFFFFF:
                raise DecodeError("field tag overflows 32 bits", offset=at)
            number, wt = tag >> 3, tag & 7
            if number == 0:
                raise DecodeError("field number 0 is not valid", offset=at)
            value: Any
            if wt == 0:
                value, pos = read_varint(self.buf, pos, end)
            elif wt == 2:
                length, pos = read_varint(self.buf, pos, end)
                if length > end - pos:
                    raise DecodeError(
                        f"field {number} declares {length} bytes, {end - pos} remain", offset=at
                    )
                value = (pos, pos + length)
                pos += length
            elif wt == 1:
                if end - pos < 8:
                    raise DecodeError(f"field {number}: truncated fixed64", offset=at)
                value = self.buf[pos : pos + 8]
                pos += 8
            elif wt == 5:
                if end - pos < 4:
                    raise DecodeError(f"field {number}: truncated fixed32", offset=at)
                value = self.buf[pos : pos + 4]
                pos += 4
            elif wt == 3:
                pos = self.skip_group(number, pos, end, at)
                continue  # groups are never AG-UI fields: unknown, skipped
            else:
                raise DecodeError(f"wire type {wt} of field {number} is not valid here", offset=at)
            occ = fields.get(number)
            if occ is None:
                fields[number] = [(wt, value, at)]
            else:
                occ.append((wt, value, at))

    def skip_group(self, number: int, pos: int, end: int, at: int) -> int:
        """Skip a (legacy) group up to its matching end-group tag."""
        open_groups = [number]
        while open_groups:
            if pos >= end:
                raise DecodeError(f"group {number} is not closed", offset=at)
            tag_at = pos
            tag, pos = read_varint(self.buf, pos, end)
            if tag > 0xFFFFFFFF:
                raise DecodeError("field tag overflows 32 bits", offset=tag_at)
            n, wt = tag >> 3, tag & 7
            if n == 0:
                raise DecodeError("field number 0 is not valid", offset=tag_at)
            if wt == 0:
                _, pos = read_varint(self.buf, pos, end)
            elif wt == 1:
                pos += 8
            elif wt == 2:
                length, pos = read_varint(self.buf, pos, end)
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

    def text(self, span: tuple[int, int], at: int) -> str:
        start, end = span
        try:
            return self.buf[start:end].decode("utf-8", self.utf8_errors)
        except UnicodeDecodeError as exc:
            raise DecodeError(
                "string is not valid UTF-8 (pass invalid_utf8='replace' to substitute U+FFFD)",
                offset=start + exc.start,
            ) from None

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
            wanted = _WIRE_TYPE[f.kind]
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
                return [self.text(span, at) for _, span, at in occs]
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
            return self.value(self.spans(occs), occs[0][2])
        if kind == Kind.STRUCT:
            return self.struct(self.spans(occs), occs[0][2])
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

    def value_head(self, spans: _Spans, depth: int = 0) -> tuple[int, Any]:
        """The kind a ``Value`` holds after protobuf merging, and its payload:
        (0, _ABSENT) no kind; (1, scalar); (5, spans) a Struct body; (6, spans) a
        ListValue body. A later kind replaces an earlier one; repeated struct/list
        occurrences of the same kind merge. What is replaced is still checked
        (UTF-8, structure, depth at ``depth``), as upb parses it too."""
        fields = self.scan(spans)
        order = sorted(
            (at, number, value)
            for number, occs in fields.items()
            if 1 <= number <= 6
            for wt, value, at in occs
            if wt == _VALUE_WIRE_TYPE[number]
        )
        if not order:
            return 0, _ABSENT
        kind = order[-1][1]
        run = len(order) - 1
        if kind in (5, 6):
            while run > 0 and order[run - 1][1] == kind:
                run -= 1
        for at, number, value in order[:run]:
            if number == 3:
                self.text(value, at)
            elif number in (5, 6):
                self.container(number, (value,), at, depth)
        if kind in (5, 6):
            return kind, tuple(v for _, _, v in order[run:])
        at, _, value = order[-1]
        if kind == 1:
            return 1, None
        if kind == 2:
            return 1, _number(value)
        if kind == 3:
            return 1, self.text(value, at)
        return 1, value != 0

    def value(self, spans: _Spans, at: int) -> Any:
        kind, payload = self.value_head(spans)
        if kind <= 1:
            return payload
        return self.container(kind, payload, at)

    def struct(self, spans: _Spans, at: int) -> dict[str, Any]:
        result = self.container(5, spans, at)
        assert isinstance(result, dict)
        return result

    def container(self, kind: int, spans: _Spans, at: int, depth: int = 0) -> Any:
        """Rebuild a JSON object/array top-down with an explicit stack; ``depth``
        is the nesting of the value this container sits in."""
        if depth + 1 > self.max_depth:
            raise LimitExceeded(
                f"JSON value nested deeper than max_depth={self.max_depth}", offset=at
            )
        root: Any = {} if kind == 5 else []
        stack = [(root, kind, self.scan(spans).get(1, []), 0)]
        while stack:
            target, ckind, items, i = stack[-1]
            if i >= len(items):
                stack.pop()
                continue
            stack[-1] = (target, ckind, items, i + 1)
            wt, span, item_at = items[i]
            if wt != 2:
                continue  # wrong wire type: an unknown field, skipped
            level = depth + len(stack)  # nesting of the values in this container
            if ckind == 5:
                key, head = self.entry(span, item_at, level)
                if head[0] == 0:
                    target.pop(key, None)  # a Value with no kind is undefined in JSON
                    continue
                if head[0] == 1:
                    target[key] = head[1]
                    continue
                child: Any = {} if head[0] == 5 else []
                target[key] = child
            else:
                head = self.value_head((span,), level)
                if head[0] <= 1:
                    target.append(None if head[0] == 0 else head[1])
                    continue
                child = {} if head[0] == 5 else []
                target.append(child)
            if level >= self.max_depth:
                raise LimitExceeded(
                    f"JSON value nested deeper than max_depth={self.max_depth}", offset=item_at
                )
            stack.append((child, head[0], self.scan(head[1]).get(1, []), 0))
        return root

    def entry(self, span: tuple[int, int], at: int, depth: int) -> tuple[str, tuple[int, Any]]:
        """A ``Struct`` map entry: its key and the head of its value."""
        fields = self.scan((span,))
        keys = [o for o in fields.get(1, ()) if o[0] == 2]
        key = self.last_text(keys) if keys else ""
        values = [o for o in fields.get(2, ()) if o[0] == 2]
        if not values:
            return key, (0, _ABSENT)
        return key, self.value_head(self.spans(values), depth)

    # -- the special shapes ----------------------------------------------------------

    def oneof(
        self, fields: dict[int, list[_Occ]], arms: Any, what: str
    ) -> tuple[int, list[_Occ]] | None:
        present = [(n, [o for o in fields[n] if o[0] == 2]) for n in sorted(fields) if n in arms]
        present = [(n, occs) for n, occs in present if occs]
        if len(present) > 1:
            numbers = ", ".join(str(n) for n, _ in present)
            raise DecodeError(
                f"{what} carries more than one arm (fields {numbers})", offset=present[1][1][0][2]
            )
        return present[0] if present else None

    def source(self, fields: dict[int, list[_Occ]]) -> Any:
        arm = self.oneof(fields, _SOURCE_BY_ARM, "a content part source")
        if arm is None:
            return _ABSENT
        stype, name = _SOURCE_BY_ARM[arm[0]]
        out: dict[str, Any] = {"type": stype}
        self.put_fields(MESSAGES[name], self.scan(self.spans(arm[1])), out)
        return out

    def content_part(self, fields: dict[int, list[_Occ]]) -> Any:
        arm = self.oneof(fields, _PART_BY_ARM, "a content part")
        if arm is None:
            if not self.quiet:
                warnings.warn(
                    "dropped a content part of a kind this AG-UI version does not know",
                    UnknownPartWarning,
                    stacklevel=2,
                )
            return _ABSENT
        ptype, name = _PART_BY_ARM[arm[0]]
        out: dict[str, Any] = {"type": ptype}
        body = self.scan(self.spans(arm[1]))
        self.put_fields(MESSAGES[name], body, out)
        if ptype != "text" and "source" not in out and any(o[0] == 2 for o in body.get(1, ())):
            # the source names no kind this version knows: the part cannot be
            # represented, and the reference drops it too
            if not self.quiet:
                warnings.warn(
                    f"dropped a {ptype} content part whose source is of an unknown kind",
                    UnknownPartWarning,
                    stacklevel=2,
                )
            return _ABSENT
        return out

    def parts(self, occs: list[_Occ]) -> list[Any]:
        items = (self.message("InputContent", [o]) for o in occs if o[0] == 2)
        return [p for p in items if p is not _ABSENT]

    def chat_message(self, fields: dict[int, list[_Occ]]) -> dict[str, Any]:
        """The union ``Message`` back to its role's JSON: ``content`` comes from
        field 3, 8 or 13 as the role says (for an unknown role, from whichever one
        carrier is populated); a carrier the role cannot have is an error."""
        out: dict[str, Any] = {}
        self.put_fields(MESSAGES["Message"], fields, out)
        text = [o for o in fields.get(3, ()) if o[0] == 2]
        parts = [o for o in fields.get(8, ()) if o[0] == 2]
        activity = [o for o in fields.get(13, ()) if o[0] == 2]
        role = out["role"]
        if role in ROLE_CONTENT:
            uses_parts = role in _PARTS_ROLES
            uses_map = role in _MAP_ROLES
            if parts and not uses_parts:
                raise DecodeError(
                    f"a {role!r} message carries content parts, which its role has none of",
                    offset=parts[0][2],
                )
            if activity and not uses_map:
                raise DecodeError(
                    f"a {role!r} message carries activity content", offset=activity[0][2]
                )
            if uses_map and text:
                raise DecodeError("an activity message carries string content", offset=text[0][2])
            if uses_parts and text and parts:
                raise DecodeError(
                    "a message carries both string content and content parts",
                    offset=parts[0][2],
                )
        else:
            if (1 if text else 0) + (1 if parts else 0) + (1 if activity else 0) > 1:
                raise DecodeError(
                    f"a message of unknown role {role!r} carries more than one content form",
                    offset=(text or parts or activity)[0][2],
                )
            uses_parts = bool(parts)
            uses_map = not uses_parts and bool(activity)
        if text:
            out["content"] = self.last_text(text)
        elif uses_parts:
            out["content"] = self.parts(parts)
        elif uses_map and activity:
            out["content"] = self.struct(self.spans(activity), activity[0][2])
        return out

    # -- the event -------------------------------------------------------------------

    def event(self) -> dict[str, Any]:
        end = len(self.buf)
        if end == 0:
            raise DecodeError("empty frame: no event")
        fields = self.scan(((0, end),))
        arm = self.oneof(fields, EVENT_BY_ARM, "the event envelope")
        if arm is None:
            raise self.no_known_arm(fields)
        spec = EVENT_BY_ARM[arm[0]]
        at = arm[1][0][2]
        body = self.scan(self.spans(arm[1]))
        base_occs = [o for o in body.get(1, ()) if o[0] == 2]
        if not base_occs:
            raise DecodeError(f"{spec.type} has no base_event", offset=at)
        base = self.scan(self.spans(base_occs))
        type_occs = [o for o in base.get(1, ()) if o[0] == 0]
        declared = type_occs[-1][1] & 0xFFFFFFFF if type_occs else 0
        if declared >= 1 << 31:
            declared -= 1 << 32
        if declared != spec.type_value:
            raise DecodeError(
                f"envelope carries {spec.type} but the base event declares "
                f"{_TYPE_BY_VALUE.get(declared, declared)}",
                offset=(type_occs[-1][2] if type_occs else base_occs[0][2]),
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
        """No arm of this version: an event of a later protocol if every field is
        unknown and at least one is a well-formed message; else broken bytes."""
        unknown: list[tuple[int, bytes]] = []
        for number, occs in sorted(fields.items()):
            for wt, value, at in occs:
                if number in EVENT_BY_ARM:
                    raise DecodeError(
                        f"event arm {number} has wire type {wt}, not a message", offset=at
                    )
                if wt == 2 and self.walks(*value):
                    unknown.append((number, self.buf[value[0] : value[1]]))
        if unknown:
            return UnknownEventError(
                "frame carries only event arms this AG-UI version does not know "
                f"(fields {', '.join(str(n) for n, _ in unknown)})",
                fields=tuple(unknown),
                offset=0,
            )
        return DecodeError("frame carries no event", offset=0)

    def walks(self, start: int, end: int) -> bool:
        try:
            self.scan(((start, end),))
        except DecodeError:
            return False
        return True

    def run_outcome(self, body: dict[int, list[_Occ]], out: dict[str, Any]) -> None:
        """RUN_FINISHED: the outcome string and its payload lists back into the
        ``outcome`` object; with no outcome the lists stay top-level (pre-1.0)."""
        outcome = self.string_field(body, 5)
        pending = [self.text(v, at) for wt, v, at in body.get(8, ()) if wt == 2]
        interrupts = [self.message("Interrupt", [o]) for o in body.get(6, ()) if o[0] == 2]
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
        outcome = self.string_field(body, 4)
        ids = [self.text(v, at) for wt, v, at in body.get(5, ()) if wt == 2]
        if not outcome:
            if ids:
                out["interruptIds"] = ids
            return
        result: dict[str, Any] = {"type": outcome}
        if ids:
            result["interruptIds"] = ids
        out["outcome"] = result

    def tool_result_content(self, body: dict[int, list[_Occ]], out: dict[str, Any]) -> None:
        text = [o for o in body.get(5, ()) if o[0] == 2]
        parts = [o for o in body.get(7, ()) if o[0] == 2]
        if text and parts:
            raise DecodeError(
                "TOOL_CALL_RESULT carries both string content and content parts",
                offset=parts[0][2],
            )
        out["content"] = self.last_text(text) if text else self.parts(parts)

    def last_text(self, occs: list[_Occ]) -> str:
        """The last occurrence wins, but every one must be valid UTF-8 (as upb
        checks every occurrence it parses)."""
        for _, span, at in occs[:-1]:
            self.text(span, at)
        return self.text(occs[-1][1], occs[-1][2])

    def string_field(self, body: dict[int, list[_Occ]], number: int) -> str:
        occs = [o for o in body.get(number, ()) if o[0] == 2]
        return self.last_text(occs) if occs else ""


class _Absent:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<absent>"


_ABSENT: Final = _Absent()
_WIRE_TYPE: Final = {
    Kind.STRING: 2,
    Kind.INT64: 0,
    Kind.BOOL: 0,
    Kind.VALUE: 2,
    Kind.STRUCT: 2,
    Kind.MESSAGE: 2,
    Kind.PATCH_OP: 0,
}
_DEFAULTS: Final = {Kind.STRING: "", Kind.INT64: 0, Kind.BOOL: False, Kind.PATCH_OP: "add"}
_VALUE_WIRE_TYPE: Final = {1: 0, 2: 1, 3: 2, 4: 0, 5: 2, 6: 2}


def _number(raw: bytes) -> int | float:
    x: float = _unpack_double(raw)[0]
    return number_from_double(x)


def decode_payload(
    data: bytes | bytearray | memoryview,
    *,
    invalid_utf8: str = "error",
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> dict[str, Any]:
    """Decode one serialized ``ag_ui.Event`` (a frame's payload) to its JSON dict."""
    if invalid_utf8 not in ("error", "replace"):
        raise ValueError(f"invalid_utf8 must be 'error' or 'replace', not {invalid_utf8!r}")
    check_max_depth(max_depth)
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"expected bytes, bytearray or memoryview, not {type(data).__name__}")
    buf = data if isinstance(data, bytes) else bytes(data)
    errors = "strict" if invalid_utf8 == "error" else "replace"
    try:
        return _Reader(buf, errors, max_depth).event()
    except LimitExceeded:
        if max_depth < MAX_DEPTH_LIMIT:
            raise_other_fault(lambda: _Reader(buf, errors, MAX_DEPTH_LIMIT, quiet=True).event())
        raise


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
