"""Pure-Python direct encoder: event dict -> protobuf wire bytes (and frames).

Strategy: walk the event once, guided by ``agui_wire.schema``, and write protobuf
wire bytes directly, with no message objects. Each message's fields are collected
by field number and joined in ascending order, nested messages behind their
length, so the bytes come out in the order ts-proto writes them. JSON objects
inside ``Struct``/``Value`` are written in JavaScript property order (integer-like
keys first, ascending, then insertion order) and an empty key is left out of its
map entry, as ts-proto does: with both, the bytes are identical to
``@ag-ui/proto`` 1.0.0's for every valid event. JSON values are encoded with an
explicit stack, so nesting depth is bounded by ``max_depth``, not by Python's
recursion limit.

Contract: this is the reference behaviour of the Cython encoder in
``_proto_writer_*.pxi`` (five parts, in this module's order) — same bytes, same
``EncodeError`` (type, path, reason) for the same input; the test suite runs both.
Validation is what the wire needs: the event type, required fields, JSON types,
integers a double or a JS number holds exactly, no NaN/Infinity, valid Unicode.
Protocol rules beyond that (role names, JSON pointer syntax, sequencing) belong to
``agui_wire.validate``.

Values are read by what they hold, never through their methods, as the Cython
twin and the SSE writer read them: a subclass of str, int or float (an enum such
as the SDK's ``EventType`` included) is its plain value whatever its ``__eq__``,
``__hash__``, ``encode``, ``__float__``, ``__index__`` say; a dict, list or
tuple subclass is its contents; any other ``Mapping`` is an object (``_plain_*``).
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from .._jsonnames import cycle_reason, json_pointer, json_repr, json_type
from ..errors import EncodeError
from ..schema import (
    ANY_CONTENT,
    BASE_EVENT_NUMBER,
    BASE_FIELDS,
    BASE_TYPE_NUMBER,
    DEFAULT_MAX_DEPTH,
    EVENTS,
    LIST_VALUES,
    MAX_DEPTH_LIMIT,
    MAX_EXACT_INT,
    MAX_FRAME_PAYLOAD,
    MAX_SAFE_INTEGER,
    MESSAGE_CONTENT,
    MESSAGES,
    OP_REQUIRED,
    OUTCOME_FIELDS,
    PART_ARMS,
    PATCH_OPS,
    ROLE_CONTENT,
    ROLE_REQUIRED,
    RUN_OUTCOME_NUMBER,
    RUN_OUTCOME_PAYLOAD,
    RUN_OUTCOME_REQUIRED,
    SOURCE_ARMS,
    STRUCT_FIELDS,
    STRUCT_KEY,
    STRUCT_VALUE,
    SUBAGENT_OUTCOME_NUMBER,
    SUBAGENT_OUTCOME_PAYLOAD,
    TOOL_RESULT_CONTENT,
    VALUE_BOOL,
    VALUE_LIST,
    VALUE_NULL,
    VALUE_NUMBER,
    VALUE_STRING,
    VALUE_STRUCT,
    WIRE_I64,
    WIRE_LEN,
    WIRE_VARINT,
    Field,
    Kind,
    MessageSpec,
    double_from_integer,
)

__all__ = [
    "FrameEncoder",
    "check_encode_options",
    "encode_frames",
    "encode_handed_over",
    "encode_payload",
    "encode_proto",
    "known_event_type",
]

_MAX_ARRAY_INDEX: Final = 2**32 - 2

# The Cython twin's _json_value(value, as_struct, max_depth, lossy, outer): the body
# as _Encoder._json writes it; or (at, value, keys), where the walk's first fault in
# it is (what is wrong: one of _AT_*); or None, when only the walk can tell. ``outer``
# is the containers open around the value (_Encoder.open), for cycles.
NativeJson = Callable[
    [Any, bool, int, bool, list[Any]], "bytes | tuple[int, Any, list[str | int]] | None"
]
_AT_VALUE: Final = 0  # a value JSON has no place for (or a Mapping: then not a fault)
_AT_KEY: Final = 1  # an object key that is not a string
_AT_DEPTH: Final = 2  # a container nested deeper than max_depth
# a container met again inside itself; value: which one, as the number of keys
# from the JSON value down to it (>= 0), or -1 - its index in ``outer``
_AT_CYCLE: Final = 3

_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_pack_double = struct.Struct("<d").pack
_pack_len = struct.Struct(">I").pack

_PATCH_OP_VALUE: Final = {name: i for i, name in enumerate(PATCH_OPS)}
_FIELD_BY_NAME: Final = {name: {f.name: f for f in spec.fields} for name, spec in MESSAGES.items()}


def _varint(n: int) -> bytes:
    if n < 0:
        n += 1 << 64  # int64 negatives are ten-byte two's complement varints
    if n < 0x80:
        return bytes((n,))
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_TAGS: Final[dict[int, bytes]] = {}


def _tag(number: int, wire_type: int) -> bytes:
    key = (number << 3) | wire_type
    tag = _TAGS.get(key)
    if tag is None:
        tag = _TAGS[key] = _varint(key)
    return tag


def _ld(number: int, body: bytes) -> bytes:
    """A length-delimited field: tag, length, body."""
    return _tag(number, WIRE_LEN) + _varint(len(body)) + body


# Value bodies of the JSON scalars that need no encoding work.
_NULL: Final = _tag(VALUE_NULL, WIRE_VARINT) + b"\x00"
_TRUE: Final = _tag(VALUE_BOOL, WIRE_VARINT) + b"\x01"
_FALSE: Final = _tag(VALUE_BOOL, WIRE_VARINT) + b"\x00"
_NUMBER: Final = _tag(VALUE_NUMBER, WIRE_I64)
_BASE_TYPE_TAG: Final = _tag(BASE_TYPE_NUMBER, WIRE_VARINT)


# -- values read by what they hold (the module doc) ---------------------------------------


def _plain_str(value: Any) -> Any:
    """A str subclass as the str it holds; anything else as it is."""
    return value if type(value) is str or not isinstance(value, str) else str.__str__(value)


def _plain_number(value: int | float) -> int | float:
    """An int or float (not bool) subclass as the exact int or float it holds."""
    t = type(value)
    if t is int or t is float:
        return value
    return float.__float__(value) if isinstance(value, float) else int.__int__(value)


def _plain_object(obj: Any) -> Any:
    """A dict subclass or another ``Mapping`` as a dict of its entries, str
    subclass keys as their str (other keys are left for the caller to refuse);
    anything else (an exact dict included) as it is."""
    if type(obj) is dict:
        return obj
    if isinstance(obj, dict):
        items: Any = dict.items(obj)
    elif isinstance(obj, Mapping):
        items = obj.items()
    else:
        return obj
    return {_plain_str(k): v for k, v in items}


def _plain_array(value: Any) -> Any:
    """A list or tuple subclass as a list of its items; anything else as it is."""
    t = type(value)
    if t is list or t is tuple:
        return value
    if isinstance(value, list):
        return list(list.__iter__(value))
    if isinstance(value, tuple):
        return list(tuple.__iter__(value))
    return value


def _is_array_index(key: str) -> bool:
    """JavaScript's canonical array index: "0".."4294967294", no sign or leading 0."""
    if not key or len(key) > 10 or not key.isascii() or not key.isdigit():
        return False
    return (key == "0" or key[0] != "0") and int(key) <= _MAX_ARRAY_INDEX


def js_key_order(obj: Mapping[str, Any]) -> list[str]:
    """The order JavaScript enumerates the keys of a JSON.parse'd object."""
    indices = [k for k in obj if isinstance(k, str) and _is_array_index(k)]
    if not indices:
        return list(obj)
    indices.sort(key=int)
    return indices + [k for k in obj if not (isinstance(k, str) and _is_array_index(k))]


class _Encoder:
    """Encodes one event; carries the options, the path for error messages and the
    containers open on the way down (a cycle is found by identity, as the SSE
    writers find it, so a wide value beside one is walked once, not once per lap
    until ``max_depth``)."""

    __slots__ = ("ancestors", "event_type", "extra", "lossy", "max_depth", "native", "open", "path")

    def __init__(
        self,
        event_type: str,
        *,
        lossy: bool,
        extra: str,
        max_depth: int,
        native: NativeJson | None = None,
    ) -> None:
        self.event_type = event_type
        self.lossy = lossy
        self.extra = extra
        self.max_depth = max_depth
        self.native = native
        self.path: list[str | int] = []
        # id of each container open on the way down -> the length of the path to it
        self.ancestors: dict[int, int] = {}
        self.open: list[Any] = []  # the message-level ones, outermost first (the event)

    def error(self, reason: str, *extra_path: str | int) -> EncodeError:
        return EncodeError(
            reason, event_type=self.event_type, path=json_pointer([*self.path, *extra_path])
        )

    # -- cycles -----------------------------------------------------------------------

    def opened(self, obj: object) -> None:
        """``obj`` (as given, not its plain copy) is open at ``self.path``."""
        self.ancestors[id(obj)] = len(self.path)
        self.open.append(obj)

    def closed(self) -> None:
        del self.ancestors[id(self.open.pop())]

    def check_cycle(self, obj: object, key: str | int) -> None:
        """Refuse ``obj``, about to be read at ``key``, if it is open on the way down."""
        n = self.ancestors.get(id(obj))
        if n is not None:
            raise self._cycle(n, key)

    def _cycle(self, n: int, key: str | int) -> EncodeError:
        """The refusal of a container met again at ``key``, first open at ``path[:n]``."""
        return self.error(cycle_reason(json_pointer(self.path[:n])), key)

    # -- scalars -----------------------------------------------------------------

    def utf8(self, value: object, key: str | int) -> bytes:
        if not isinstance(value, str):
            raise self.error(f"expected a string, got {json_type(value)}", key)
        try:
            return str.encode(value, "utf-8")
        except UnicodeEncodeError as exc:
            raise self._lone_surrogate(exc.start, key) from None

    def _lone_surrogate(self, index: int, key: str | int) -> EncodeError:
        return self.error(f"string is not valid Unicode (lone surrogate at index {index})", key)

    def int64(self, value: object, key: str) -> int:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(f"expected an integer, got {json_type(value)}", key)
        value = _plain_number(value)
        if isinstance(value, float):
            if not value.is_integer():
                raise self.error(f"expected an integer, got {value!r}", key)
            value = int(value)
        if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            raise self.error(
                f"integer {json_repr(value)} is outside the safe range ±(2^53-1)"
                " a JS peer can read",
                key,
            )
        return value

    def double(self, value: int | float, key: str | int) -> bytes:
        value = _plain_number(value)
        if isinstance(value, float):
            if not math.isfinite(value):
                raise self.error(f"{value!r} is not a JSON number", key)
            return _pack_double(value)
        if -MAX_EXACT_INT <= value <= MAX_EXACT_INT:
            return _pack_double(value)
        if not self.lossy:
            raise self.error(
                f"integer {json_repr(value)} does not fit a double exactly "
                "(pass lossy_numbers=True to round it)",
                key,
            )
        return _pack_double(double_from_integer(value))

    # -- JSON values ---------------------------------------------------------------

    def value(self, obj: object, key: str | int) -> bytes:
        """The body of a ``google.protobuf.Value`` holding ``obj``."""
        return self._json(obj, key, as_struct=False)

    def struct(self, obj: object, key: str | int) -> bytes:
        """The body of a ``google.protobuf.Struct`` holding the object ``obj``."""
        self.check_cycle(obj, key)
        if not isinstance(obj, Mapping):
            raise self.error(f"expected an object, got {json_type(obj)}", key)
        return self._json(obj, key, as_struct=True)

    def _scalar(self, obj: object, key: str | int) -> bytes | None:
        """Value body for a JSON scalar, None for a container."""
        if obj is None:
            return _NULL
        if obj is True:
            return _TRUE
        if obj is False:
            return _FALSE
        if isinstance(obj, str):
            return _ld(VALUE_STRING, self.utf8(obj, key))
        if isinstance(obj, (int, float)):
            return _NUMBER + self.double(obj, key)
        if isinstance(obj, (dict, list, tuple, Mapping)):
            return None
        raise self.error(f"{json_type(obj)} is not a JSON value", key)

    def _json(self, root: object, root_key: str | int, *, as_struct: bool) -> bytes:
        # Depth-first with an explicit stack of open containers; each frame
        # accumulates its serialized entries (Struct) or values (ListValue) and,
        # when done, is written into its parent as a Value. Each open container is
        # in self.ancestors while it is open.
        self.check_cycle(root, root_key)
        if self.native is not None:
            got = self.native(root, as_struct, self.max_depth, self.lossy, self.open)
            if type(got) is bytes:
                return got
            if got is not None:
                self._located(root_key, *got)  # raises, unless it is not a fault here
        if not as_struct:
            leaf = self._scalar(root, root_key)
            if leaf is not None:
                return leaf
        self.path.append(root_key)
        stack = [self._frame(root, root_key)]
        ancestors = self.ancestors
        ancestors[id(root)] = len(self.path)
        while True:
            frame = stack[-1]
            if frame.pos < len(frame.keys):
                key = frame.keys[frame.pos]
                frame.pos += 1
                child = frame.container[key]
                body = self._scalar(child, key)
                if body is None:
                    n = ancestors.get(id(child))
                    if n is not None:
                        raise self._cycle(n, key)
                    if len(stack) >= self.max_depth:
                        raise self._too_deep(key)
                    self.path.append(key)
                    stack.append(self._frame(child, key))
                    ancestors[id(child)] = len(self.path)
                else:
                    self._put(frame, key, body)
                continue
            stack.pop()
            del ancestors[frame.ident]
            self.path.pop()
            if not stack:
                return bytes(frame.out) if as_struct else _ld(frame.kind, bytes(frame.out))
            self._put(stack[-1], frame.key, _ld(frame.kind, bytes(frame.out)))

    def _frame(self, container: Any, key: str | int) -> _Frame:
        ident = id(container)
        if isinstance(container, (list, tuple)):
            container = _plain_array(container)
            return _Frame(container, range(len(container)), VALUE_LIST, key, ident)
        container = _plain_object(container)
        # every key is checked before any value: a key that is no string is the
        # object's fault, met before whatever its values hold
        if any(type(k) is not str for k in container):
            for k in container:
                if not isinstance(k, str):
                    raise self._bad_key(k)
            container = {_plain_str(k): v for k, v in container.items()}
        return _Frame(container, js_key_order(container), VALUE_STRUCT, key, ident)

    def _too_deep(self, key: str | int) -> EncodeError:
        return self.error(f"JSON value nested deeper than max_depth={self.max_depth}", key)

    def _bad_key(self, key: object) -> EncodeError:
        return self.error(f"object key {json_repr(key)} is not a string")

    def _located(self, root_key: str | int, at: int, value: object, keys: list[str | int]) -> None:
        """Raise the refusal the Cython twin located in the JSON value at ``root_key``:
        ``at`` says what is wrong (_AT_VALUE, _AT_KEY, _AT_DEPTH, _AT_CYCLE), ``keys``
        where below it. Worded by the same methods as the walk's, so with the same text. Returns
        when the value is not a fault by these rules (the walk then decides)."""
        saved = self.path
        try:
            if at == _AT_KEY:
                self.path = [*saved, root_key, *keys]
                raise self._bad_key(value)
            key = root_key
            if keys:
                self.path = [*saved, root_key, *keys[:-1]]
                key = keys[-1]
            if at == _AT_DEPTH:
                raise self._too_deep(key)
            if at == _AT_VALUE and isinstance(value, str):
                # the first code point UTF-8 has none for (str.encode's exc.start),
                # found without raising a UnicodeEncodeError
                found = _SURROGATE.search(str.__str__(value))
                if found is not None:
                    raise self._lone_surrogate(found.start(), key)
            if at == _AT_CYCLE:
                assert isinstance(value, int)
                if value >= 0:  # inside the value: root_key's path, then `value` keys
                    raise self._cycle(len(saved) + 1 + value, key)
                raise self._cycle(self.ancestors[id(self.open[-1 - value])], key)
            self._scalar(value, key)
        finally:
            self.path = saved

    def _put(self, frame: _Frame, key: str | int, body: bytes) -> None:
        if frame.kind == VALUE_STRUCT:
            # ts-proto leaves an empty map key out of its entry
            entry = _ld(STRUCT_KEY, self.utf8(key, key)) if key else b""
            frame.out += _ld(STRUCT_FIELDS, entry + _ld(STRUCT_VALUE, body))
        else:
            frame.out += _ld(LIST_VALUES, body)

    # -- messages --------------------------------------------------------------------

    def fields(
        self,
        spec: MessageSpec,
        obj: Mapping[str, Any],
        parts: dict[int, bytes],
        required: tuple[str, ...] = (),
    ) -> None:
        """Write the 1:1 fields of ``spec`` found in ``obj`` into ``parts`` by number."""
        for f in spec.fields:
            value = obj.get(f.name)
            if value is None and not (f.nullable and f.name in obj):
                if f.required or f.name in required:
                    raise self.error(
                        "required field is missing" if f.name not in obj else "required, got null",
                        f.name,
                    )
                continue
            out = self.field(f, value)
            if out:
                parts[f.number] = out

    def field(self, f: Field, value: Any) -> bytes:
        """One field's wire bytes (empty when proto3 leaves a default unwritten)."""
        kind = f.kind
        self.check_cycle(value, f.name)
        if f.repeated:
            if not isinstance(value, (list, tuple)):
                raise self.error(f"expected an array, got {json_type(value)}", f.name)
            self.path.append(f.name)
            self.opened(value)
            value = _plain_array(value)
            try:
                if kind == Kind.STRING:
                    out = bytearray()
                    for i, v in enumerate(value):
                        self.check_cycle(v, i)
                        out += _ld(f.number, self.utf8(v, i))
                    return bytes(out)
                assert f.message is not None
                return b"".join(
                    _ld(f.number, self.message(f.message, v, i)) for i, v in enumerate(value)
                )
            finally:
                self.closed()
                self.path.pop()
        if kind == Kind.STRING:
            data = self.utf8(value, f.name)
            if not data and not f.presence:
                return b""
            return _ld(f.number, data)
        if kind == Kind.VALUE:
            return _ld(f.number, self.value(value, f.name))
        if kind == Kind.STRUCT:
            return _ld(f.number, self.struct(value, f.name))
        if kind == Kind.MESSAGE:
            assert f.message is not None
            return _ld(f.number, self.message(f.message, value, f.name))
        if kind == Kind.INT64:
            return _tag(f.number, 0) + _varint(self.int64(value, f.name))
        if kind == Kind.BOOL:
            if not isinstance(value, bool):
                raise self.error(f"expected a boolean, got {json_type(value)}", f.name)
            return _tag(f.number, 0) + (b"\x01" if value else b"\x00")
        assert kind == Kind.PATCH_OP
        op = _PATCH_OP_VALUE.get(_plain_str(value)) if isinstance(value, str) else None
        if op is None:
            raise self.error(
                f"unknown patch op {json_repr(value)} (expected one of {', '.join(PATCH_OPS)})",
                f.name,
            )
        return _tag(f.number, 0) + _varint(op) if op else b""

    def message(self, name: str, obj: Any, key: str | int) -> bytes:
        """The body of the nested message ``name`` holding the JSON object ``obj``."""
        self.check_cycle(obj, key)
        if not isinstance(obj, Mapping):
            raise self.error(f"expected an object, got {json_type(obj)}", key)
        self.path.append(key)
        self.opened(obj)
        obj = _plain_object(obj)
        try:
            parts: dict[int, bytes] = {}
            if name == "Message":
                known = self.chat_message(obj, parts)
            elif name == "InputContentSource":
                known = self.source(obj, parts)
            elif name == "JsonPatchOperation":
                op = _plain_str(obj.get("op"))
                spec = MESSAGES[name]
                self.fields(
                    spec, obj, parts, OP_REQUIRED.get(op, ()) if isinstance(op, str) else ()
                )
                known = _FIELD_BY_NAME[name].keys()
            else:
                self.fields(MESSAGES[name], obj, parts)
                known = _FIELD_BY_NAME[name].keys()
            self.check_extra(obj, known)
            return _join(parts)
        finally:
            self.closed()
            self.path.pop()

    def check_extra(self, obj: Mapping[Any, Any], known: Any, *more: str) -> None:
        """``extra_keys="error"``: refuse keys the wire has no field for."""
        if self.extra != "error":
            return
        unknown = [k for k in obj if k not in known and k not in more]
        if unknown:
            raise self.error(
                "no wire field for key(s) "
                + ", ".join(repr(k) for k in unknown)
                + " (extra_keys='drop' drops them, as @ag-ui/proto does)"
            )

    def chat_message(self, obj: Mapping[str, Any], parts: dict[int, bytes]) -> Any:
        """A chat message: every role's fields map 1:1 onto the union ``Message``;
        ``content`` rides the field MESSAGE_CONTENT names for its JSON type, by role."""
        role = _plain_str(obj.get("role"))
        required = ROLE_REQUIRED.get(role, ()) if isinstance(role, str) else ()
        self.fields(MESSAGES["Message"], obj, parts, tuple(r for r in required if r != "content"))
        content = obj.get("content")
        if content is None:
            if "content" in required:
                raise self.error(
                    "required field is missing" if "content" not in obj else "required, got null",
                    "content",
                )
            return _MESSAGE_KEYS
        self.check_cycle(content, "content")
        allowed = ROLE_CONTENT.get(role, ANY_CONTENT) if isinstance(role, str) else ANY_CONTENT
        if isinstance(content, str) and "str" in allowed:
            n = MESSAGE_CONTENT["str"]
            parts[n] = _ld(n, self.utf8(content, "content"))
        elif isinstance(content, (list, tuple)) and "list" in allowed:
            n = MESSAGE_CONTENT["list"]
            parts[n] = self.content_parts(content, n)
        elif isinstance(content, Mapping) and "dict" in allowed:
            n = MESSAGE_CONTENT["dict"]
            parts[n] = _ld(n, self.struct(content, "content"))
        else:
            expected = " or ".join(_CONTENT_NAMES[a] for a in allowed)
            raise self.error(
                f"content of a {role!r} message must be {expected}, got {json_type(content)}",
                "content",
            )
        return _MESSAGE_KEYS

    def content_parts(self, parts: list[Any] | tuple[Any, ...], number: int) -> bytes:
        """Repeated ``InputContent`` at field ``number``: each part in its oneof arm."""
        self.path.append("content")
        self.opened(parts)
        try:
            out = bytearray()
            for i, part in enumerate(_plain_array(parts)):
                self.check_cycle(part, i)
                if not isinstance(part, Mapping):
                    raise self.error(f"expected a content part object, got {json_type(part)}", i)
                given = part
                part = _plain_object(part)
                ptype = _plain_str(part.get("type"))
                arm = PART_ARMS.get(ptype) if isinstance(ptype, str) else None
                if arm is None:
                    raise self.error(
                        f"unknown content part type {json_repr(ptype)} "
                        f"(expected one of {', '.join(PART_ARMS)})",
                        i,
                        "type",
                    )
                self.path.append(i)
                self.opened(given)
                body: dict[int, bytes] = {}
                self.fields(MESSAGES[arm[1]], part, body)
                self.check_extra(part, _PART_KEYS[str(ptype)])
                self.closed()
                self.path.pop()
                out += _ld(number, _ld(arm[0], _join(body)))
            return bytes(out)
        finally:
            self.closed()
            self.path.pop()

    def source(self, obj: Mapping[str, Any], parts: dict[int, bytes]) -> Any:
        """A content part's source: JSON union on ``type``, a oneof on the wire."""
        stype = _plain_str(obj.get("type"))
        arm = SOURCE_ARMS.get(stype) if isinstance(stype, str) else None
        if arm is None:
            raise self.error(
                f"unknown source type {json_repr(stype)}"
                f" (expected one of {', '.join(SOURCE_ARMS)})",
                "type",
            )
        body: dict[int, bytes] = {}
        self.fields(MESSAGES[arm[1]], obj, body)
        parts[arm[0]] = _ld(arm[0], _join(body))
        return _SOURCE_KEYS[str(stype)]

    # -- the event -------------------------------------------------------------------

    def event(self, event: Mapping[str, Any]) -> bytes:
        """The ``Event`` message body: one arm, the arm's base event first."""
        spec = EVENTS[self.event_type]
        base: dict[int, bytes] = {}
        if spec.type_value:
            base[BASE_TYPE_NUMBER] = _BASE_TYPE_TAG + _varint(spec.type_value)
        self.fields(_BASE_SPEC, event, base)
        # present even when empty
        parts: dict[int, bytes] = {BASE_EVENT_NUMBER: _ld(BASE_EVENT_NUMBER, _join(base))}
        self.fields(spec.message, event, parts)
        known: tuple[str, ...] = ()
        if spec.type == "RUN_FINISHED":
            self.outcome(
                event, parts, RUN_OUTCOME_NUMBER, RUN_OUTCOME_PAYLOAD, RUN_OUTCOME_REQUIRED
            )
            known = ("outcome",)
        elif spec.type == "SUBAGENT_FINISHED":
            self.outcome(event, parts, SUBAGENT_OUTCOME_NUMBER, SUBAGENT_OUTCOME_PAYLOAD, {})
            known = ("outcome",)
        elif spec.type == "TOOL_CALL_RESULT":
            self.tool_result_content(event, parts)
            known = ("content",)
        self.check_extra(event, _EVENT_KEYS[spec.type], *known)
        return _ld(spec.arm, _join(parts))

    def outcome(
        self,
        event: Mapping[str, Any],
        parts: dict[int, bytes],
        number: int,
        payloads: Mapping[str, tuple[str, int] | None],
        required: Mapping[str, tuple[str, ...]],
    ) -> None:
        """Flatten ``outcome`` {type, payload} into the outcome string field plus
        the payload's repeated field; absent outcome is the empty string."""
        outcome = event.get("outcome")
        if outcome is None:
            return
        self.check_cycle(outcome, "outcome")
        if not isinstance(outcome, Mapping):
            raise self.error(f"expected an object, got {json_type(outcome)}", "outcome")
        given = outcome
        outcome = _plain_object(outcome)
        otype = _plain_str(outcome.get("type"))
        if not isinstance(otype, str) or not otype:
            raise self.error(
                f"expected a non-empty string, got {json_type(otype)}", "outcome", "type"
            )
        parts[number] = _ld(number, self.utf8(otype, "outcome"))
        payload = payloads.get(otype)
        self.path.append("outcome")
        self.opened(given)
        try:
            if payload is not None:
                key, field_number = payload
                value = outcome.get(key)
                if value is None:
                    if key in required.get(otype, ()):
                        raise self.error("required field is missing", key)
                else:
                    f = OUTCOME_FIELDS[field_number, key]
                    out = self.field(f, value)
                    if out:
                        parts[field_number] = out
            self.check_extra(outcome, ("type",), *((payload[0],) if payload else ()))
        finally:
            self.closed()
            self.path.pop()

    def tool_result_content(self, event: Mapping[str, Any], parts: dict[int, bytes]) -> None:
        content = event.get("content")
        if content is None:
            raise self.error(
                "required field is missing" if "content" not in event else "required, got null",
                "content",
            )
        self.check_cycle(content, "content")
        if isinstance(content, str):
            n = TOOL_RESULT_CONTENT["str"]
            parts[n] = _ld(n, self.utf8(content, "content"))
        elif isinstance(content, (list, tuple)):
            n = TOOL_RESULT_CONTENT["list"]
            parts[n] = self.content_parts(content, n)
        else:
            raise self.error(
                f"expected a string or an array of content parts, got {json_type(content)}",
                "content",
            )


class _Frame:
    """An open JSON container: a dict (Struct: kind VALUE_STRUCT) or a list
    (ListValue: kind VALUE_LIST), the Value field it is written in."""

    __slots__ = ("container", "ident", "key", "keys", "kind", "out", "pos")

    def __init__(self, container: Any, keys: Any, kind: int, key: str | int, ident: int) -> None:
        self.container = container
        self.ident = ident  # id of the container as given (not of its plain copy)
        self.keys = keys
        self.kind = kind
        self.key = key
        self.pos = 0
        self.out = bytearray()


def _join(parts: dict[int, bytes]) -> bytes:
    return b"".join(parts[n] for n in sorted(parts))


_BASE_SPEC: Final = MessageSpec("BaseEvent", BASE_FIELDS)
_CONTENT_NAMES: Final = {
    "str": "a string",
    "list": "an array of content parts",
    "dict": "an object",
}
_MESSAGE_KEYS: Final = frozenset(_FIELD_BY_NAME["Message"]) | {"content"}
_PART_KEYS: Final = {
    ptype: frozenset(_FIELD_BY_NAME[name]) | {"type"} for ptype, (_, name) in PART_ARMS.items()
}
_SOURCE_KEYS: Final = {
    stype: frozenset(_FIELD_BY_NAME[name]) | {"type"} for stype, (_, name) in SOURCE_ARMS.items()
}
_EVENT_KEYS: Final = {
    t: frozenset(f.name for f in spec.message.fields) | {"type"} | {f.name for f in BASE_FIELDS}
    for t, spec in EVENTS.items()
}


def _prefix(payload: bytes) -> bytes:
    if len(payload) > MAX_FRAME_PAYLOAD:
        raise EncodeError(f"event encodes to {len(payload)} bytes, more than a frame can carry")
    return _pack_len(len(payload))


def check_encode_options(extra_keys: str, max_depth: int, lossy_numbers: bool = False) -> None:
    """``ValueError`` for the first invalid option of an encoder (this one's, the
    Cython twin's, ``upb.event_to_proto``'s), in this order."""
    if extra_keys not in ("drop", "error"):
        raise ValueError(f"extra_keys must be 'drop' or 'error', not {extra_keys!r}")
    if type(max_depth) is not int or not 1 <= max_depth <= MAX_DEPTH_LIMIT:
        raise ValueError(f"max_depth must be an int in 1..{MAX_DEPTH_LIMIT}, not {max_depth!r}")
    if type(lossy_numbers) is not bool:
        raise ValueError(f"lossy_numbers must be True or False, not {lossy_numbers!r}")


def known_event_type(event: Mapping[str, Any], etype: Any) -> str:
    """``etype`` (``event``'s ``type``) when it names an event, else the refusal
    every encoder gives for it (this one, the Cython twin's fallback, upb's)."""
    if isinstance(etype, str) and etype in EVENTS:
        return etype
    if "type" not in event:
        raise EncodeError("required field is missing", path="/type")
    raise EncodeError(
        f"unknown event type {etype!r}"
        if isinstance(etype, str)
        else f"expected a string, got {json_type(etype)}",
        path="/type",
    )


def encode_payload(
    event: Mapping[str, Any],
    *,
    lossy_numbers: bool = False,
    extra_keys: str = "drop",
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> bytes:
    """The serialized ``ag_ui.Event`` for one event dict (no length prefix)."""
    check_encode_options(extra_keys, max_depth, lossy_numbers)
    return _encode(event, lossy_numbers, extra_keys, max_depth)


def _encode(
    event: Any, lossy: bool, extra: str, max_depth: int, native: NativeJson | None = None
) -> bytes:
    """The payload of ``event``; ``native`` as ``encode_handed_over`` is given it."""
    if not isinstance(event, Mapping):
        raise EncodeError(f"an event must be a JSON object (dict), got {json_type(event)}")
    given = event
    event = _plain_object(event)
    etype = known_event_type(event, _plain_str(event.get("type")))
    encoder = _Encoder(etype, lossy=lossy, extra=extra, max_depth=max_depth, native=native)
    encoder.opened(given)
    return encoder.event(event)


# Where the Cython twin's walk refused an event: (event type, top-level field, whether
# of the base event, then where inside its JSON value as NativeJson reports it: at,
# value, keys; or three Nones)
Refusal = tuple[str, str, bool, int | None, Any, list[str | int] | None]


def encode_handed_over(
    event: Any,
    found: Refusal | None,
    lossy: bool,
    extra: str,
    max_depth: int,
    native: NativeJson,
) -> bytes:
    """The payload of an event the Cython twin handed over (invalid, or valid but
    read only here); for it alone (through ``seam``). ``found``: where its walk
    refused it, or None. ``native`` is its ``_json_value``: each JSON value goes to
    it first, so a refusal inside a big value is found in C; the walk here finds
    the same first fault, in the same order."""
    if found is not None:
        _refuse(event, *found, lossy, extra, max_depth, native)
    return _encode(event, lossy, extra, max_depth, native)


_ONE_FIELD: dict[tuple[bool, str, str], MessageSpec] = {}


def _refuse(
    event: dict[str, Any],
    etype: str,
    name: str,
    base: bool,
    at: int | None,
    value: Any,
    keys: list[str | int] | None,
    lossy: bool,
    extra: str,
    max_depth: int,
    native: NativeJson | None,
) -> None:
    """Raise the refusal the Cython twin located in an event it refused: the walk's
    first fault is in the top-level field ``name`` (of the base event when
    ``base``), every field before it being fine; with ``at``, inside the JSON value
    there (as ``native`` reports it). Worded by the walk's own methods, so with the
    same text. Returns when they find no fault there (the caller walks the event)."""
    encoder = _Encoder(etype, lossy=lossy, extra=extra, max_depth=max_depth, native=native)
    encoder.opened(event)
    if at is not None:
        assert keys is not None
        encoder._located(name, at, value, keys)
        return
    spec = _ONE_FIELD.get((base, etype, name))
    if spec is None:
        whole = _BASE_SPEC if base else EVENTS[etype].message
        field = next(f for f in whole.fields if f.name == name)
        spec = _ONE_FIELD[base, etype, name] = MessageSpec(whole.name, (field,))
    encoder.fields(spec, event, {})


def as_event_dict(event: Any) -> Any:
    """The JSON dict of an event: dicts as they are, pydantic models of the
    official SDK dumped the way its own encoder writes them (camelCase aliases,
    optional fields without a value left out by the SDK's serializer). A model
    pydantic cannot dump (a cycle, a value of a type it has no JSON for) is an
    ``EncodeError``, as the same value in a dict is."""
    if isinstance(event, dict):
        return event
    dump = getattr(event, "model_dump", None)
    if dump is not None:
        try:
            return dump(mode="json", by_alias=True)
        except ValueError as exc:  # pydantic_core.PydanticSerializationError
            etype = getattr(event, "type", None)
            raise EncodeError(
                f"the SDK event does not serialize: {exc}",
                event_type=str.__str__(etype) if isinstance(etype, str) else None,
            ) from None
    return event  # the encoders reject it with an EncodeError naming its type


def encode_proto(
    event: Mapping[str, Any] | Any,
    *,
    lossy_numbers: bool = False,
    extra_keys: str = "drop",
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> bytes:
    """One binary frame for ``event``: 4-byte big-endian length + ``ag_ui.Event``.

    ``event`` is a dict shaped as ``@ag-ui/core`` JSON, or an official SDK pydantic
    event (``as_event_dict``). Byte-identical to ``@ag-ui/proto`` 1.0.0 for valid
    events. Raises ``EncodeError`` (event type, JSON pointer, reason) for anything
    the wire cannot carry faithfully; see docs/wire-format.md for the rules.
    """
    check_encode_options(extra_keys, max_depth, lossy_numbers)
    if type(event) is not dict:
        event = as_event_dict(event)
    payload = _encode(event, lossy_numbers, extra_keys, max_depth)
    return _prefix(payload) + payload


def encode_frames(
    events: Iterable[Mapping[str, Any]],
    *,
    lossy_numbers: bool = False,
    extra_keys: str = "drop",
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> bytes:
    """Frames for several events, concatenated: a binary stream body."""
    check_encode_options(extra_keys, max_depth, lossy_numbers)
    out = bytearray()
    for event in events:
        payload = _encode(event, lossy_numbers, extra_keys, max_depth)
        out += _prefix(payload)
        out += payload
    return bytes(out)


class FrameEncoder:
    """``encode_proto`` with its options bound, for a caller that encodes event after
    event (``EventEncoder``). An event that is not a ``dict`` goes through
    ``convert`` first (the official SDK's pydantic events). The Cython twin makes
    ``.encode`` a single C call."""

    __slots__ = ("_convert", "_extra", "_lossy", "_max_depth")

    def __init__(
        self,
        *,
        lossy_numbers: bool = False,
        extra_keys: str = "drop",
        max_depth: int = DEFAULT_MAX_DEPTH,
        convert: Callable[[Any], Any] | None = None,
    ) -> None:
        check_encode_options(extra_keys, max_depth, lossy_numbers)
        self._lossy = lossy_numbers
        self._extra = extra_keys
        self._max_depth = max_depth
        self._convert = convert

    def encode(self, event: Any) -> bytes:
        """One frame."""
        if type(event) is not dict and self._convert is not None:
            event = self._convert(event)
        payload = _encode(event, self._lossy, self._extra, self._max_depth)
        return _prefix(payload) + payload

    def encode_many(self, events: Iterable[Any]) -> bytes:
        """The frames of several events, concatenated."""
        convert = self._convert
        if convert is not None:
            events = [e if type(e) is dict else convert(e) for e in events]
        return encode_frames(
            events, lossy_numbers=self._lossy, extra_keys=self._extra, max_depth=self._max_depth
        )
