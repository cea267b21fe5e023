"""The upb path: event dicts <-> ``ag_ui.Event`` message objects.

Strategy: an independent implementation of the JSON <-> protobuf mapping over
google.protobuf message objects (the upb backend), written by field assignment and
``HasField``/``WhichOneof`` rather than by reading or writing wire bytes. upb owns
every wire-level decision here: presence, merging, UTF-8 validation, map semantics.
That makes this module the reference the direct codecs (``_fast``, ``proto_writer``,
``proto_reader``) are tested against: the same events must give the same messages,
and the same bytes must give the same dicts or the same class of error.

Use it when you want message objects (``event_to_proto``/``event_from_proto``);
for bytes use ``agui_wire.encode_proto``/``decode_proto``, which are faster and
byte-identical to the TypeScript reference (upb writes map entries in its own
order; see docs/wire-format.md).

Two things upb cannot do on its own, and what this module does about them:

* It silently keeps the last arm when a oneof occurs twice with different arms;
  AG-UI calls that broken (the reference rejects it too), so a guard walks the
  bytes first and rejects two different arms of ``Event``, ``InputContent`` or
  ``InputContentSource``.
* Its parse depth is capped at 100 message levels (about 32 levels of JSON
  objects; nested groups count too) unless ``SetAllowOversizeProtos`` lifts the
  cap to 65535, where the C stack is the limit. The guard measures the JSON
  nesting first; past ``max_depth`` the frame is refused (``LimitExceeded``),
  below it the parse runs with the cap lifted for the duration of the call, as it
  does for a frame with (unknown, skipped) groups. Groups nested some 65,000
  deep remain beyond upb, which refuses them where the direct decoders skip them
  (docs/errors.md lists this exception).

A frame that is too deep and has another fault raises the other fault, as in
``proto_reader`` (``raise_other_fault``), so all decoders give the same class.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator, Mapping
from typing import Any, Final

from google._upb import _message as _upb_message
from google.protobuf import struct_pb2
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError as _ProtobufDecodeError
from google.protobuf.message import Message as _Message

from .._jsonnames import json_pointer, json_type, not_a_pointer, one_of
from .._pb import events_pb2
from ..errors import DecodeError, EncodeError, LimitExceeded, UnknownEventError
from ..schema import (
    BASE_FIELDS,
    DEFAULT_MAX_DEPTH,
    EVENTS,
    JSON_POINTER,
    MAX_DEPTH_LIMIT,
    MAX_EXACT_INT,
    MAX_SAFE_INTEGER,
    MESSAGE_HEAD,
    MESSAGES,
    OP_REQUIRED,
    OUTCOME_FIELDS,
    PART_ARMS,
    PATCH_OPS,
    ROLE_CONTENT,
    ROLE_FIELDS,
    ROLE_REQUIRED,
    RUN_OUTCOME_PAYLOAD,
    RUN_OUTCOME_REQUIRED,
    SOURCE_ARMS,
    SUBAGENT_OUTCOME_PAYLOAD,
    Field,
    Kind,
    MessageSpec,
    double_from_integer,
    number_from_double,
)
from .encoder_inputs import check_encode_options, known_event_type
from .proto_reader import check_max_depth, raise_other_fault, read_varint, refuse_invalid

__all__ = ["decode_payload", "encode_payload", "event_from_proto", "event_to_proto"]

# upb's own cap: 100 message levels; a JSON object level costs three
# (Value, Struct, map entry), so beyond ~30 JSON levels the cap must be lifted.
_UPB_SAFE_JSON_DEPTH: Final = 30

_EVENT_DESC: Final = events_pb2.Event.DESCRIPTOR
_ARM_NAME: Final = {
    spec.type: _EVENT_DESC.fields_by_number[spec.arm].name for spec in EVENTS.values()
}
_TYPE_BY_ARM_NAME: Final = {name: t for t, name in _ARM_NAME.items()}
_TYPE_BY_VALUE: Final = {spec.type_value: spec.type for spec in EVENTS.values()}
_PARTS_ROLES: Final = frozenset(r for r, c in ROLE_CONTENT.items() if "list" in c)
_MAP_ROLES: Final = frozenset(r for r, c in ROLE_CONTENT.items() if "dict" in c)
_PART_BY_ARM_NAME: Final = {
    name[0].lower() + name[1:].removesuffix("InputPart"): t for t, (_, name) in PART_ARMS.items()
}
_BASE: Final = MessageSpec("BaseEvent", BASE_FIELDS)
# Message: id and role, then per role the other keys its shape declares
_MESSAGE_HEAD: Final = MessageSpec("Message", MESSAGE_HEAD)
_ROLE_SPECS: Final = {role: MessageSpec("Message", f) for role, f in ROLE_FIELDS.items()}
_CONTENT_NAMES: Final = {
    "str": "a string",
    "list": "an array of content parts",
    "dict": "an object",
}
_OUTCOME_FIELDS: Final = {f.name: f for f in OUTCOME_FIELDS.values()}


def _attr(desc: Any, number: int) -> str:
    name: str = desc.fields_by_number[number].name
    return name


# -- dict -> message ---------------------------------------------------------------


class _Builder:
    __slots__ = ("event_type", "extra", "lossy", "max_depth", "path")

    def __init__(self, event_type: str, lossy: bool, extra: str, max_depth: int) -> None:
        self.event_type = event_type
        self.lossy = lossy
        self.extra = extra
        self.max_depth = max_depth
        self.path: list[str | int] = []

    def error(self, reason: str, *more: str | int) -> EncodeError:
        return EncodeError(
            reason, event_type=self.event_type, path=json_pointer([*self.path, *more])
        )

    def string(self, value: object, *key: str | int) -> str:
        if not isinstance(value, str):
            raise self.error(f"expected a string, got {json_type(value)}", *key)
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise self.error(
                f"string is not valid Unicode (lone surrogate at index {exc.start})", *key
            ) from None
        return value

    def missing(self, obj: Mapping[str, Any], name: str) -> EncodeError:
        return self.error(
            "required field is missing" if name not in obj else "required, got null", name
        )

    def fill(
        self,
        msg: _Message,
        spec: MessageSpec,
        obj: Mapping[str, Any],
        required: tuple[str, ...] = (),
    ) -> None:
        desc = msg.DESCRIPTOR
        for f in spec.fields:
            value = obj.get(f.name)
            if value is None and not (f.nullable and f.name in obj):
                if f.required or f.name in required:
                    raise self.missing(obj, f.name)
                continue
            self.set(msg, desc, f, value)

    def set(self, msg: _Message, desc: Any, f: Field, value: Any) -> None:
        attr = _attr(desc, f.number)
        if f.repeated:
            if not isinstance(value, (list, tuple)):
                raise self.error(f"expected an array, got {json_type(value)}", f.name)
            if len(value) < f.min_items:
                raise self.error(f"needs at least {f.min_items} item(s), has {len(value)}", f.name)
            container = getattr(msg, attr)
            self.path.append(f.name)
            for i, item in enumerate(value):
                if f.kind == Kind.STRING:
                    container.append(self.string(item, i))
                else:
                    assert f.message is not None
                    self.message(container.add(), f.message, item, i)
            self.path.pop()
            return
        kind = f.kind
        if kind == Kind.STRING:
            setattr(msg, attr, self.text(f, value))
        elif kind == Kind.INT64:
            setattr(msg, attr, self.int64(value, f.name, f.minimum))
        elif kind == Kind.BOOL:
            if not isinstance(value, bool):
                raise self.error(f"expected a boolean, got {json_type(value)}", f.name)
            setattr(msg, attr, value)
        elif kind == Kind.PATCH_OP:
            if not isinstance(value, str) or value not in PATCH_OPS:
                raise self.error(
                    f"unknown patch op {value!r} (expected one of {', '.join(PATCH_OPS)})", f.name
                )
            setattr(msg, attr, PATCH_OPS.index(value))
        elif kind == Kind.VALUE:
            if f.json_object and not isinstance(value, dict):
                raise self.error(f"expected an object, got {json_type(value)}", f.name)
            self.value(getattr(msg, attr), value, f.name)
        elif kind == Kind.STRUCT:
            if not isinstance(value, dict):
                raise self.error(f"expected an object, got {json_type(value)}", f.name)
            target = getattr(msg, attr)
            target.SetInParent()
            self.json_into(target, value, f.name, struct_root=True)
        else:
            assert f.message is not None
            sub = getattr(msg, attr)
            sub.SetInParent()
            self.message(sub, f.message, value, f.name)

    def text(self, f: Field, value: object) -> str:
        """A string field, held to its rules (``Field.choices``, ``Field.pointer``)."""
        text = self.string(value, f.name)
        if f.choices and text not in f.choices:
            raise self.error(f"{text!r} is not allowed here (expected {one_of(f.choices)})", f.name)
        if f.pointer and not JSON_POINTER.fullmatch(text):
            raise self.error(not_a_pointer(repr(text)), f.name)
        return text

    def int64(self, value: object, key: str, minimum: int = -MAX_SAFE_INTEGER) -> int:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(f"expected an integer, got {json_type(value)}", key)
        if isinstance(value, float):
            if not value.is_integer():
                raise self.error(f"expected an integer, got {value!r}", key)
            value = int(value)
        if abs(value) > MAX_SAFE_INTEGER:
            raise self.error(
                f"integer {value} is outside the safe range ±(2^53-1) a JS peer can read", key
            )
        if value < minimum:
            raise self.error(f"integer {value} is below {minimum}, the least allowed here", key)
        return value

    def number(self, value: int | float, key: str | int) -> float:
        if isinstance(value, float):
            if not math.isfinite(value):
                raise self.error(f"{value!r} is not a JSON number", key)
            return value
        if abs(value) <= MAX_EXACT_INT:
            return float(value)
        if not self.lossy:
            raise self.error(
                f"integer {value} does not fit a double exactly "
                "(pass lossy_numbers=True to round it)",
                key,
            )
        return double_from_integer(value)

    def value(self, target: struct_pb2.Value, obj: Any, key: str | int) -> None:
        self.json_into(target, obj, key, struct_root=False)

    def json_into(self, target: Any, obj: Any, key: str | int, *, struct_root: bool) -> None:
        """Fill a Value (or, with ``struct_root``, a Struct) from JSON, breadth by
        an explicit work list so depth is bounded by ``max_depth`` only."""
        base = [*self.path, key]
        work: list[tuple[Any, Any, list[str | int], int, bool]] = [
            (target, obj, base, 0, struct_root)
        ]
        while work:
            msg, item, path, depth, is_struct = work.pop()
            if is_struct:
                container = msg
            elif item is None:
                msg.null_value = struct_pb2.NULL_VALUE
                continue
            elif isinstance(item, bool):
                msg.bool_value = item
                continue
            elif isinstance(item, str):
                msg.string_value = self._string_at(item, path)
                continue
            elif isinstance(item, (int, float)):
                msg.number_value = self._number_at(item, path)
                continue
            elif isinstance(item, dict):
                container = msg.struct_value
                container.SetInParent()
            elif isinstance(item, (list, tuple)):
                lst = msg.list_value
                lst.SetInParent()
                if depth + 1 > self.max_depth:
                    raise self._at(
                        path, f"JSON value nested deeper than max_depth={self.max_depth}"
                    )
                for i, child in enumerate(item):
                    work.append((lst.values.add(), child, [*path, i], depth + 1, False))
                continue
            else:
                raise self._at(path, f"{json_type(item)} is not a JSON value")
            if depth + 1 > self.max_depth:
                raise self._at(path, f"JSON value nested deeper than max_depth={self.max_depth}")
            for k, child in item.items():
                if not isinstance(k, str):
                    raise self._at(path, f"object key {k!r} is not a string")
                self._string_at(k, [*path, k])
                work.append((container.fields[k], child, [*path, k], depth + 1, False))

    def _at(self, path: list[str | int], reason: str) -> EncodeError:
        return EncodeError(reason, event_type=self.event_type, path=json_pointer(path))

    def _string_at(self, value: str, path: list[str | int]) -> str:
        saved, self.path = self.path, path[:-1]
        try:
            return self.string(value, path[-1])
        finally:
            self.path = saved

    def _number_at(self, value: int | float, path: list[str | int]) -> float:
        saved, self.path = self.path, path[:-1]
        try:
            return self.number(value, path[-1])
        finally:
            self.path = saved

    def message(self, msg: _Message, name: str, obj: Any, key: str | int) -> None:
        if not isinstance(obj, dict):
            raise self.error(f"expected an object, got {json_type(obj)}", key)
        self.path.append(key)
        if name == "Message":
            known = self.chat_message(msg, obj)
        elif name == "InputContentSource":
            known = self.source(msg, obj)
        elif name == "JsonPatchOperation":
            op = obj.get("op")
            self.fill(
                msg, MESSAGES[name], obj, OP_REQUIRED.get(op, ()) if isinstance(op, str) else ()
            )
            known = frozenset(f.name for f in MESSAGES[name].fields)
        else:
            self.fill(msg, MESSAGES[name], obj)
            known = frozenset(f.name for f in MESSAGES[name].fields)
        self.check_extra(obj, known)
        self.path.pop()

    def check_extra(self, obj: Mapping[Any, Any], known: Any) -> None:
        """Keys the wire has no field for: refused with extra_keys="error", else
        dropped, each a JSON value all the same (as proto_writer.check_extra)."""
        unknown = [k for k in obj if k not in known]
        if not unknown:
            return
        if self.extra == "error":
            raise self.error(
                "no wire field for key(s) "
                + ", ".join(repr(k) for k in unknown)
                + " (extra_keys='drop' drops them, as @ag-ui/proto does)"
            )
        for k in unknown:
            if not isinstance(k, str):
                raise self.error(f"object key {k!r} is not a string")
            self.string(k, k)
            self.value(struct_pb2.Value(), obj[k], k)

    def chat_message(self, msg: Any, obj: Mapping[str, Any]) -> frozenset[str]:
        """The keys of its role (``ROLE_KEYS``); the others are extra keys."""
        self.fill(msg, _MESSAGE_HEAD, obj)  # id and a known role
        role = obj["role"]
        required = ROLE_REQUIRED[role]
        self.fill(msg, _ROLE_SPECS[role], obj, tuple(r for r in required if r != "content"))
        known = frozenset({"id", "role", "content", *(f.name for f in ROLE_FIELDS[role])})
        content = obj.get("content")
        if content is None:
            if "content" in required:
                raise self.missing(obj, "content")
            return known
        allowed = ROLE_CONTENT[role]
        if isinstance(content, str) and "str" in allowed:
            msg.content = self.string(content, "content")
        elif isinstance(content, (list, tuple)) and "list" in allowed:
            self.parts(msg.content_parts, content)
        elif isinstance(content, dict) and "dict" in allowed:
            msg.activity_content.SetInParent()
            self.json_into(msg.activity_content, content, "content", struct_root=True)
        else:
            expected = " or ".join(_CONTENT_NAMES[a] for a in allowed)
            raise self.error(
                f"content of a {role!r} message must be {expected}, got {json_type(content)}",
                "content",
            )
        return known

    def parts(self, container: Any, parts: list[Any] | tuple[Any, ...]) -> None:
        self.path.append("content")
        for i, part in enumerate(parts):
            if not isinstance(part, dict):
                raise self.error(f"expected a content part object, got {json_type(part)}", i)
            ptype = part.get("type")
            if not isinstance(ptype, str) or ptype not in PART_ARMS:
                raise self.error(
                    f"unknown content part type {ptype!r} (expected one of {', '.join(PART_ARMS)})",
                    i,
                    "type",
                )
            number, name = PART_ARMS[ptype]
            item = container.add()
            arm = getattr(item, _attr(item.DESCRIPTOR, number))
            arm.SetInParent()
            self.path.append(i)
            self.fill(arm, MESSAGES[name], part)
            self.check_extra(part, {f.name for f in MESSAGES[name].fields} | {"type"})
            self.path.pop()
        self.path.pop()

    def source(self, msg: Any, obj: Mapping[str, Any]) -> frozenset[str]:
        stype = obj.get("type")
        if not isinstance(stype, str) or stype not in SOURCE_ARMS:
            raise self.error(
                f"unknown source type {stype!r} (expected one of {', '.join(SOURCE_ARMS)})", "type"
            )
        number, name = SOURCE_ARMS[stype]
        arm = getattr(msg, _attr(msg.DESCRIPTOR, number))
        arm.SetInParent()
        self.fill(arm, MESSAGES[name], obj)
        return frozenset({f.name for f in MESSAGES[name].fields} | {"type"})

    def outcome(
        self,
        body: Any,
        event: Mapping[str, Any],
        payloads: Mapping[str, tuple[str, int] | None],
        required: Mapping[str, tuple[str, ...]],
    ) -> None:
        outcome = event.get("outcome")
        if outcome is None:
            return
        if not isinstance(outcome, dict):
            raise self.error(f"expected an object, got {json_type(outcome)}", "outcome")
        otype = outcome.get("type")
        if not isinstance(otype, str) or not otype:
            raise self.error(
                f"expected a non-empty string, got {json_type(otype)}", "outcome", "type"
            )
        if otype not in payloads:
            raise self.error(
                f"{otype!r} is not an outcome type (expected {one_of(payloads)})",
                "outcome",
                "type",
            )
        body.outcome = self.string(otype, "outcome")
        payload = payloads.get(otype)
        self.path.append("outcome")
        if payload is not None:
            key = payload[0]
            value = outcome.get(key)
            if value is None:
                if key in required.get(otype, ()):
                    raise self.error("required field is missing", key)
            else:
                self.set(body, body.DESCRIPTOR, _OUTCOME_FIELDS[key], value)
        self.check_extra(outcome, {"type", *((payload[0],) if payload else ())})
        self.path.pop()

    def event(self, event: Mapping[str, Any]) -> events_pb2.Event:
        spec = EVENTS[self.event_type]
        out = events_pb2.Event()
        body = getattr(out, _ARM_NAME[spec.type])
        body.base_event.SetInParent()
        body.base_event.type = spec.type_value
        self.fill(body.base_event, _BASE, event)
        self.fill(body, spec.message, event)
        known = {"type", *(f.name for f in spec.message.fields), *(f.name for f in BASE_FIELDS)}
        if spec.type == "RUN_FINISHED":
            self.outcome(body, event, RUN_OUTCOME_PAYLOAD, RUN_OUTCOME_REQUIRED)
            known.add("outcome")
        elif spec.type == "SUBAGENT_FINISHED":
            self.outcome(body, event, SUBAGENT_OUTCOME_PAYLOAD, {})
            known.add("outcome")
        elif spec.type == "TOOL_CALL_RESULT":
            known.add("content")
            content = event.get("content")
            if content is None:
                raise self.missing(event, "content")
            if isinstance(content, str):
                body.content = self.string(content, "content")
            elif isinstance(content, (list, tuple)):
                self.parts(body.content_parts, content)
            else:
                raise self.error(
                    f"expected a string or an array of content parts, got {json_type(content)}",
                    "content",
                )
        self.check_extra(event, known)
        return out


def event_to_proto(
    event: Mapping[str, Any],
    *,
    lossy_numbers: bool = False,
    extra_keys: str = "drop",
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> events_pb2.Event:
    """The ``ag_ui.Event`` message for an event dict (the JSON of ``@ag-ui/core``).

    Raises ``EncodeError`` exactly where ``encode_proto`` does.
    """
    check_encode_options(extra_keys, max_depth)
    if not isinstance(event, dict):
        raise EncodeError(f"an event must be a JSON object (dict), got {json_type(event)}")
    etype = known_event_type(event, event.get("type"))
    return _Builder(etype, lossy_numbers, extra_keys, max_depth).event(event)


def encode_payload(event: Mapping[str, Any], **options: Any) -> bytes:
    """``event_to_proto(event).SerializeToString(deterministic=True)``: the same
    message as ``encode_proto``'s payload, with map entries in upb's order."""
    data: bytes = event_to_proto(event, **options).SerializeToString(deterministic=True)
    return data


# -- message -> dict ---------------------------------------------------------------


class _Absent:
    __slots__ = ()


_ABSENT: Final = _Absent()


class _Reader:
    __slots__ = ("max_depth",)

    def __init__(self, max_depth: int) -> None:
        self.max_depth = max_depth

    def read(self, msg: Any, spec: MessageSpec, out: dict[str, Any]) -> None:
        desc = msg.DESCRIPTOR
        for f in spec.fields:
            attr = _attr(desc, f.number)
            if f.repeated:
                items = getattr(msg, attr)
                if not items and f.omit_empty:
                    continue
                if f.kind == Kind.STRING:
                    out[f.name] = list(items)
                else:
                    assert f.message is not None
                    out[f.name] = [self.message(item, f.message) for item in items]
                continue
            if f.presence and not msg.HasField(attr):
                continue
            value = getattr(msg, attr)
            kind = f.kind
            if kind in (Kind.STRING, Kind.INT64, Kind.BOOL):
                out[f.name] = value
            elif kind == Kind.PATCH_OP:
                out[f.name] = PATCH_OPS[value] if 0 <= value < len(PATCH_OPS) else str(value)
            elif kind == Kind.VALUE:
                converted = self.value(value)
                if converted is not _ABSENT:
                    out[f.name] = converted
            elif kind == Kind.STRUCT:
                out[f.name] = self.struct(value)
            else:
                assert f.message is not None
                converted = self.message(value, f.message)
                if converted is not _ABSENT:
                    out[f.name] = converted

    def message(self, msg: Any, name: str) -> Any:
        if name == "Message":
            return self.chat_message(msg)
        if name == "InputContentSource":
            arm = msg.WhichOneof("source")
            if arm is None:
                return _ABSENT
            out: dict[str, Any] = {"type": arm}
            self.read(getattr(msg, arm), MESSAGES[SOURCE_ARMS[arm][1]], out)
            return out
        out = {}
        self.read(msg, MESSAGES[name], out)
        return out

    def parts(self, items: Any) -> list[Any]:
        import warnings

        from ..errors import UnknownPartWarning

        result = []
        for item in items:
            arm = item.WhichOneof("part")
            if arm is None:
                warnings.warn(
                    "dropped a content part of a kind this AG-UI version does not know",
                    UnknownPartWarning,
                    stacklevel=3,
                )
                continue
            ptype = _PART_BY_ARM_NAME[arm]
            body = getattr(item, arm)
            out: dict[str, Any] = {"type": ptype}
            self.read(body, MESSAGES[PART_ARMS[ptype][1]], out)
            # a source of a kind this version does not know drops the part (which parts
            # have a source is the schema's business: text has none, a newer part may not)
            has_source = "source" in body.DESCRIPTOR.fields_by_name
            if has_source and body.HasField("source") and "source" not in out:
                warnings.warn(
                    f"dropped a {ptype} content part whose source is of an unknown kind",
                    UnknownPartWarning,
                    stacklevel=3,
                )
                continue
            result.append(out)
        return result

    def chat_message(self, msg: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        self.read(msg, MESSAGES["Message"], out)
        role = msg.role
        has_text = msg.HasField("content")
        has_parts = len(msg.content_parts) > 0
        has_map = msg.HasField("activity_content")
        if role in ROLE_CONTENT:
            uses_parts, uses_map = role in _PARTS_ROLES, role in _MAP_ROLES
            if has_parts and not uses_parts:
                raise DecodeError(
                    f"a {role!r} message carries content parts, which its role has none of"
                )
            if has_map and not uses_map:
                raise DecodeError(f"a {role!r} message carries activity content")
            if uses_map and has_text:
                raise DecodeError("an activity message carries string content")
            if uses_parts and has_text and has_parts:
                raise DecodeError("a message carries both string content and content parts")
        else:
            if has_text + has_parts + has_map > 1:
                raise DecodeError(
                    f"a message of unknown role {role!r} carries more than one content form"
                )
            uses_parts, uses_map = has_parts, not has_parts and has_map
        if has_text:
            out["content"] = msg.content
        elif uses_parts:
            out["content"] = self.parts(msg.content_parts)
        elif uses_map and has_map:
            out["content"] = self.struct(msg.activity_content)
        return out

    def value(self, value: struct_pb2.Value) -> Any:
        return self._json(value, is_struct=False)

    def struct(self, value: struct_pb2.Struct) -> dict[str, Any]:
        result = self._json(value, is_struct=True)
        assert isinstance(result, dict)
        return result

    def _json(self, root: Any, *, is_struct: bool) -> Any:
        """Value/Struct -> JSON with a work list; a Value with no kind is absent
        (undefined in JSON): no key in an object, ``null`` in an array."""
        work: list[tuple[Any, Any, Any, int, bool]] = []
        holder: dict[str, Any] = {}
        work.append((root, holder, "root", 0, is_struct))
        while work:
            msg, parent, key, depth, as_struct = work.pop()
            if as_struct:
                kind = "struct_value"
                container_msg = msg
            else:
                kind = msg.WhichOneof("kind")
                container_msg = (
                    getattr(msg, kind) if kind in ("struct_value", "list_value") else None
                )
            if kind is None:
                if isinstance(parent, list):
                    parent[key] = None
                continue
            if kind == "null_value":
                parent[key] = None
            elif kind == "number_value":
                parent[key] = number_from_double(msg.number_value)
            elif kind == "string_value":
                parent[key] = msg.string_value
            elif kind == "bool_value":
                parent[key] = msg.bool_value
            else:
                if depth + 1 > self.max_depth:
                    raise LimitExceeded(f"JSON value nested deeper than max_depth={self.max_depth}")
                if kind == "struct_value":
                    obj: dict[str, Any] = {}
                    parent[key] = obj
                    for k in container_msg.fields:
                        work.append((container_msg.fields[k], obj, k, depth + 1, False))
                else:
                    values = container_msg.values
                    lst: list[Any] = [None] * len(values)
                    parent[key] = lst
                    for i, item in enumerate(values):
                        work.append((item, lst, i, depth + 1, False))
        return holder.get("root", _ABSENT)

    def event(self, msg: events_pb2.Event) -> dict[str, Any]:
        arm = msg.WhichOneof("event")
        if arm is None:
            raise DecodeError("frame carries no event")
        etype = _TYPE_BY_ARM_NAME[arm]
        spec = EVENTS[etype]
        body = getattr(msg, arm)
        if not body.HasField("base_event"):
            raise DecodeError(f"{etype} has no base_event")
        declared = body.base_event.type
        if declared != spec.type_value:
            raise DecodeError(
                f"envelope carries {etype} but the base event declares "
                f"{_TYPE_BY_VALUE.get(declared, declared)}"
            )
        out: dict[str, Any] = {"type": etype}
        self.read(body, spec.message, out)
        if etype == "RUN_FINISHED":
            self.outcome(
                out,
                body.outcome,
                {
                    "pendingToolCallIds": list(body.pending_tool_call_ids),
                    "interrupts": [self.message(i, "Interrupt") for i in body.interrupts],
                },
                list_first="interrupt",
            )
        elif etype == "SUBAGENT_FINISHED":
            self.outcome(
                out, body.outcome, {"interruptIds": list(body.interrupt_ids)}, list_first=None
            )
        elif etype == "TOOL_CALL_RESULT":
            if body.HasField("content") and len(body.content_parts):
                raise DecodeError("TOOL_CALL_RESULT carries both string content and content parts")
            out["content"] = (
                body.content if body.HasField("content") else self.parts(body.content_parts)
            )
        self.read(body.base_event, _BASE, out)
        return out

    @staticmethod
    def outcome(
        out: dict[str, Any], outcome: str, lists: dict[str, list[Any]], list_first: str | None
    ) -> None:
        if not outcome:
            out.update((k, v) for k, v in lists.items() if v)
            return
        result: dict[str, Any] = {"type": outcome}
        if outcome == list_first:
            result["interrupts"] = lists["interrupts"]
        result.update((k, v) for k, v in lists.items() if v)
        out["outcome"] = result


def event_from_proto(
    msg: events_pb2.Event, *, max_depth: int = DEFAULT_MAX_DEPTH
) -> dict[str, Any]:
    """The event dict (the JSON of ``@ag-ui/core``) for an ``ag_ui.Event`` message."""
    if not isinstance(msg, events_pb2.Event):
        raise TypeError(f"expected an ag_ui.Event message, got {type(msg).__qualname__}")
    return _Reader(max_depth).event(msg)


# -- bytes -> message: the guard and the parse ----------------------------------------

_AGUI_ONEOFS: Final = frozenset(
    {"ag_ui.Event.event", "ag_ui.InputContent.part", "ag_ui.InputContentSource.source"}
)
_JSON_CONTAINERS: Final = frozenset({"google.protobuf.Struct", "google.protobuf.ListValue"})
_oversize_lock = threading.Lock()


def _fields(
    buf: bytes, start: int, end: int, nesting: list[int] | None = None
) -> Iterator[tuple[int, int, int, int]]:
    """(number, wire type, payload start, payload end) of each field; groups
    skipped (the deepest group nesting seen is kept in ``nesting[0]``)."""
    pos = start
    groups: list[int] = []
    while pos < end:
        at = pos
        tag, pos = read_varint(buf, pos, end)
        number, wt = tag >> 3, tag & 7
        if number == 0 or tag > 0xFFFFFFFF:
            raise DecodeError("invalid field tag", offset=at)
        if wt == 0:
            _, pos = read_varint(buf, pos, end)
            payload = (pos, pos)
        elif wt == 1:
            pos += 8
            payload = (pos - 8, pos)
        elif wt == 2:
            length, pos = read_varint(buf, pos, end)
            pos += length
            payload = (pos - length, pos)
        elif wt == 5:
            pos += 4
            payload = (pos - 4, pos)
        elif wt == 3:
            groups.append(number)
            if nesting is not None and len(groups) > nesting[0]:
                nesting[0] = len(groups)
            continue
        elif wt == 4:
            if not groups or groups.pop() != number:
                raise DecodeError("unbalanced group", offset=at)
            continue
        else:
            raise DecodeError(f"invalid wire type {wt}", offset=at)
        if pos > end:
            raise DecodeError("field runs past the end of its message", offset=at)
        if not groups:
            yield number, wt, payload[0], payload[1]
    if groups:
        raise DecodeError("unclosed group", offset=end)


def _guard(buf: bytes, max_depth: int) -> tuple[int, int]:
    """Reject what upb would accept silently (two arms of an AG-UI oneof); return
    the JSON nesting and the deepest nesting of (unknown, skipped) groups."""
    if not buf:
        raise DecodeError("empty frame: no event")
    deepest = 0
    groups = [0]
    # (descriptor, start, end, json depth)
    work: list[tuple[Any, int, int, int]] = [(_EVENT_DESC, 0, len(buf), 0)]
    while work:
        desc, start, end, depth = work.pop()
        if desc.full_name in _JSON_CONTAINERS:
            depth += 1
            if depth > max_depth:
                raise LimitExceeded(
                    f"JSON value nested deeper than max_depth={max_depth}", offset=start
                )
            deepest = max(deepest, depth)
        arms: dict[str, int] = {}
        for number, wt, s, e in _fields(buf, start, end, groups):
            fd = desc.fields_by_number.get(number)
            if fd is None or fd.type != FieldDescriptor.TYPE_MESSAGE or wt != 2:
                continue
            oneof = fd.containing_oneof
            if oneof is not None and oneof.full_name in _AGUI_ONEOFS:
                first = arms.setdefault(oneof.full_name, number)
                if first != number:
                    raise DecodeError(
                        f"{desc.name} carries more than one arm (fields {first}, {number})",
                        offset=s,
                    )
            work.append((fd.message_type, s, e, depth))
    return deepest, groups[0]


def _classify_no_arm(buf: bytes) -> DecodeError:
    unknown: list[tuple[int, bytes]] = []
    for number, wt, s, e in _fields(buf, 0, len(buf)):
        if number in _EVENT_DESC.fields_by_number:
            raise DecodeError(f"event arm {number} has wire type {wt}, not a message")
        if wt == 2:
            try:
                for _ in _fields(buf, s, e):
                    pass
            except DecodeError:
                continue
            unknown.append((number, buf[s:e]))
    if unknown:
        return UnknownEventError(
            "frame carries only event arms this AG-UI version does not know "
            f"(fields {', '.join(str(n) for n, _ in unknown)})",
            fields=tuple(unknown),
            offset=0,
        )
    return DecodeError("frame carries no event", offset=0)


def decode_payload(
    data: bytes | bytearray | memoryview,
    *,
    max_depth: int = DEFAULT_MAX_DEPTH,
    invalid_events: str = "raise",
) -> dict[str, Any]:
    """Decode one ``ag_ui.Event`` payload through upb (the reference decoder);
    ``InvalidEvent`` for an event ``@ag-ui/core``'s schemas reject (the contract
    ``proto_reader`` holds, in its words), unless ``invalid_events="keep"``."""
    if invalid_events not in ("raise", "keep"):
        raise ValueError(f"invalid_events must be 'raise' or 'keep', not {invalid_events!r}")
    check_max_depth(max_depth)
    buf = bytes(data)
    try:
        event = _decode(buf, max_depth)
    except LimitExceeded:
        if max_depth < MAX_DEPTH_LIMIT:
            # the same rule as proto_reader: another fault wins over the limit
            raise_other_fault(lambda: _decode(buf, MAX_DEPTH_LIMIT))
        raise
    if invalid_events == "raise":
        refuse_invalid(event)
    return event


def _decode(buf: bytes, max_depth: int) -> dict[str, Any]:
    deepest, groups = _guard(buf, max_depth)
    try:
        # upb counts groups against its 100-level cap too; the direct decoders skip
        # unknown groups at any nesting, so the cap is lifted when there are any
        if deepest <= _UPB_SAFE_JSON_DEPTH and not groups:
            msg = events_pb2.Event.FromString(buf)
        else:
            with _oversize_lock:
                _upb_message.SetAllowOversizeProtos(True)
                try:
                    msg = events_pb2.Event.FromString(buf)
                finally:
                    _upb_message.SetAllowOversizeProtos(False)
    except _ProtobufDecodeError as exc:
        raise DecodeError(f"upb rejected the frame: {exc}") from None
    if msg.WhichOneof("event") is None:
        raise _classify_no_arm(buf)
    return _Reader(max_depth).event(msg)
