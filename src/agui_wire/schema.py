"""The AG-UI 1.0 JSON shapes laid over the protobuf schema.

Strategy: field numbers, wire types and presence are read from the generated
descriptors, so ``proto/`` stays the one truth for the wire. This module adds only
what a ``.proto`` cannot say: which JSON fields are required (from the
``@ag-ui/core`` 1.0.0 zod schemas), which may be ``null``, and the few places where
the JSON shape is not the message shape. Those places are named here and handled
by every codec (Cython, pure Python, upb) the same way:

* the event envelope: JSON ``type`` selects the ``Event`` oneof arm; ``timestamp``,
  ``rawEvent`` and ``metadata`` live in the arm's ``BaseEvent``;
* ``content`` of messages and ``TOOL_CALL_RESULT``: one JSON key, three carriers;
* content parts and their sources: JSON unions on ``type``, protobuf oneofs;
* ``RUN_FINISHED`` / ``SUBAGENT_FINISHED`` ``outcome``: a JSON object flattened into
  a string plus the payload fields of the parent message;
* patch ``op``: lowercase names in JSON, an enum on the wire.

Null rule (the reference's ``omitOptionalNulls``, made uniform): ``None`` means
"absent" for every field except the four that carry a JSON value that may itself
be null (``NULLABLE``). A required field that is absent or ``None`` is an error.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Container, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Final

from google.protobuf import struct_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor, FileDescriptor

from ._pb import events_pb2, patch_pb2, types_pb2
from .errors import SchemaError

__all__ = [
    "ANY_CONTENT",
    "BASE_EVENT_NUMBER",
    "BASE_FIELDS",
    "BASE_TYPE_NUMBER",
    "CHOICES",
    "COUNTS",
    "DEFAULT_MAX_BATCH_EVENTS",
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_EVENT_SIZE",
    "DEFAULT_MAX_FRAME_SIZE",
    "EVENTS",
    "EVENT_BY_ARM",
    "EVENT_TYPES",
    "FRAME_HEADER_SIZE",
    "JSON_MAX_NESTING",
    "JSON_OBJECTS",
    "JSON_POINTER",
    "KIND_WIRE_TYPE",
    "LIST_VALUES",
    "MAX_DEPTH_LIMIT",
    "MAX_EXACT_INT",
    "MAX_FRAME_PAYLOAD",
    "MAX_SAFE_INTEGER",
    "MESSAGES",
    "MESSAGE_COMMON",
    "MESSAGE_CONTENT",
    "MESSAGE_HEAD",
    "MIN_ITEMS",
    "NULLABLE",
    "NULL_AS_ABSENT",
    "OP_REQUIRED",
    "OUTCOME_FIELDS",
    "PART_ARMS",
    "PATCH_OPS",
    "POINTERS",
    "ROLE_CONTENT",
    "ROLE_FIELDS",
    "ROLE_KEYS",
    "ROLE_REQUIRED",
    "RUN_OUTCOME_NUMBER",
    "RUN_OUTCOME_PAYLOAD",
    "RUN_OUTCOME_REQUIRED",
    "SOURCE_ARMS",
    "STRUCT_FIELDS",
    "STRUCT_KEY",
    "STRUCT_VALUE",
    "SUBAGENT_OUTCOME_NUMBER",
    "SUBAGENT_OUTCOME_PAYLOAD",
    "TEXT_MESSAGE_ROLES",
    "TOOL_RESULT_CONTENT",
    "VALUE_BOOL",
    "VALUE_LIST",
    "VALUE_NULL",
    "VALUE_NUMBER",
    "VALUE_STRING",
    "VALUE_STRUCT",
    "VALUE_WIRE_TYPES",
    "WIRE_EGROUP",
    "WIRE_I32",
    "WIRE_I64",
    "WIRE_LEN",
    "WIRE_SGROUP",
    "WIRE_VARINT",
    "EventSpec",
    "Field",
    "Kind",
    "MessageSpec",
    "double_from_integer",
    "number_from_double",
    "wire_type",
]


# JSON integers must survive JS (Number.MAX_SAFE_INTEGER) and a double.
MAX_SAFE_INTEGER: Final = 2**53 - 1


class Kind(enum.IntEnum):
    """How a JSON value is carried on the wire."""

    STRING = 1  # string field
    INT64 = 2  # int64 varint; a JSON integer
    BOOL = 3  # bool varint
    VALUE = 4  # google.protobuf.Value: any JSON value
    STRUCT = 5  # google.protobuf.Struct: a JSON object
    MESSAGE = 6  # a nested ag_ui message; Field.message names its spec
    PATCH_OP = 7  # JsonPatchOperationType enum; "add" ... "test" in JSON


@dataclass(frozen=True, slots=True)
class Field:
    """One JSON key mapped 1:1 onto one wire field."""

    name: str  # JSON key (camelCase, as @ag-ui/core)
    number: int  # wire field number in its message
    kind: Kind
    repeated: bool = False
    presence: bool = False  # explicit presence: written even when "" / 0 / false
    required: bool = False  # JSON requires it (absent or None is an EncodeError)
    nullable: bool = False  # JSON null is a value here (written as NullValue)
    message: str | None = None  # spec name for Kind.MESSAGE
    omit_empty: bool = False  # repeated: decode leaves the key out when empty
    # what JSON allows beyond the kind's type (CHOICES, POINTERS, COUNTS,
    # JSON_OBJECTS, MIN_ITEMS; the defaults allow anything of the type)
    choices: tuple[str, ...] = ()  # the strings allowed; () is any string
    pointer: bool = False  # a JSON pointer (RFC 6901)
    minimum: int = -MAX_SAFE_INTEGER  # an integer's lower bound
    json_object: bool = False  # a Value that must hold a JSON object
    min_items: int = 0  # a repeated field's least number of items
    null_is_absent: bool = False  # JSON null here reads as absent (NULL_AS_ABSENT)


@dataclass(frozen=True, slots=True)
class MessageSpec:
    """A wire message and the JSON keys mapped 1:1 onto its fields."""

    name: str
    fields: tuple[Field, ...]  # ascending field number

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"{self.name} has no JSON field {name!r}")


@dataclass(frozen=True, slots=True)
class EventSpec:
    """One of the 31 events: its JSON ``type``, envelope arm and arm message."""

    type: str  # JSON "type", e.g. "TEXT_MESSAGE_CONTENT"
    arm: int  # Event oneof field number (NOT always type_value + 1)
    type_value: int  # EventType enum value written as BaseEvent.type
    message: MessageSpec  # the arm message, without base_event and special fields


# -- facts about the JSON shapes that the .proto cannot carry -------------------

# Wire fields handled by a special rule instead of a 1:1 JSON key (see module doc).
_SPECIAL: Final = {
    "Message": {"content", "content_parts", "activity_content"},
    "ToolCallResultEvent": {"content", "content_parts"},
    "RunFinishedEvent": {"outcome", "interrupts", "pending_tool_call_ids"},
    "SubagentFinishedEvent": {"outcome", "interrupt_ids"},
}

# Repeated fields JSON may leave out (zod `.optional()`); every other repeated
# field is required.
_OPTIONAL_REPEATED: Final = {
    ("RunAgentInput", "tools"),
    ("RunAgentInput", "context"),
    ("RunAgentInput", "resume"),
    ("Message", "tool_calls"),
    ("RunFinishedEvent", "usage"),
    ("RunErrorEvent", "usage"),
}

# Repeated fields the reference decoder leaves out when empty (every other
# repeated field decodes to an array, possibly []: proto3 cannot tell empty from
# absent, so a rule is needed, and the reference's is the one peers expect).
_OMIT_EMPTY: Final = {
    ("Message", "tool_calls"),
    ("RunFinishedEvent", "usage"),
    ("RunErrorEvent", "usage"),
}

# JSON values that may be null and still be present ("any JSON, null allowed").
# Everywhere else None means absent.
NULLABLE: Final = frozenset(
    {
        ("StateSnapshotEvent", "snapshot"),
        ("RawEvent", "event"),
        ("CustomEvent", "value"),
        ("JsonPatchOperation", "value"),
    }
)

# Implicit-presence fields that JSON does not require for every variant of the
# union the message represents: requiredness then depends on the discriminator
# (Message.role, JsonPatchOperation.op), see ROLE_REQUIRED / OP_REQUIRED.
_VARIANT_REQUIRED: Final = {
    ("JsonPatchOperation", "value"),
    ("JsonPatchOperation", "from"),
}

# Message: what each known role requires beyond id and role, and which JSON types
# its `content` may take (the carrier of each: MESSAGE_CONTENT). Unknown roles (a
# later protocol) may use any single carrier and require nothing more.
ROLE_REQUIRED: Final = MappingProxyType(
    {
        "developer": ("content",),
        "system": ("content",),
        "assistant": (),
        "user": ("content",),
        "tool": ("content", "toolCallId"),
        "activity": ("content", "activityType"),
        "reasoning": ("content",),
    }
)
ROLE_CONTENT: Final = MappingProxyType(
    {
        "developer": ("str",),
        "system": ("str",),
        "assistant": ("str",),
        "user": ("str", "list"),
        "tool": ("str", "list"),
        "activity": ("dict",),
        "reasoning": ("str",),
    }
)
ANY_CONTENT: Final = ("str", "list", "dict")
# Message: the JSON keys each known role's shape declares besides id, role and
# subagentRunId (which every message has), in @ag-ui/core's order. The SSE
# writer's null rule and the validator's shapes read it; tests/interop/
# test_schema.py holds it to the zod schemas.
ROLE_KEYS: Final = MappingProxyType(
    {
        "developer": ("name", "encryptedValue", "metadata", "content"),
        "system": ("name", "encryptedValue", "metadata", "content"),
        "assistant": ("name", "encryptedValue", "metadata", "content", "toolCalls"),
        "user": ("name", "encryptedValue", "metadata", "content"),
        "tool": ("content", "toolCallId", "error", "encryptedValue", "metadata"),
        "activity": ("activityType", "content", "metadata"),
        "reasoning": ("content", "encryptedValue", "metadata"),
    }
)
# The roles a streamed text message (TEXT_MESSAGE_START/_CHUNK ``role``) may
# take: not tool (TOOL_CALL_RESULT carries those), activity or reasoning.
TEXT_MESSAGE_ROLES: Final = ("developer", "system", "assistant", "user")

# JSON Patch: the op names in enum order, and what each op requires beyond op/path.
PATCH_OPS: Final = tuple(
    patch_pb2.JsonPatchOperationType.Name(i).lower()
    for i in sorted(patch_pb2.JsonPatchOperationType.values())
)
OP_REQUIRED: Final = MappingProxyType(
    {
        "add": ("value",),
        "remove": (),
        "replace": ("value",),
        "move": ("from",),
        "copy": ("from",),
        "test": ("value",),
    }
)


# What @ag-ui/core's zod schemas ask of a field beyond the JSON type its kind
# gives (keys: wire message, proto field name). Every codec and the validator
# read these through ``Field``: the encoders refuse, the decoders and
# ``agui_wire.validate`` report what breaks them.
# The strings a string field may hold (a zod enum or literal).
CHOICES: Final = MappingProxyType(
    {
        ("TextMessageStartEvent", "role"): TEXT_MESSAGE_ROLES,
        ("TextMessageChunkEvent", "role"): TEXT_MESSAGE_ROLES,
        ("ToolCallResultEvent", "role"): ("tool",),
        ("ReasoningMessageStartEvent", "role"): ("reasoning",),
        ("ReasoningEncryptedValueEvent", "subtype"): ("tool-call", "message"),
        ("ResumeEntry", "status"): ("resolved", "cancelled"),
        ("ToolCall", "type"): ("function",),
        ("Message", "role"): tuple(ROLE_KEYS),
    }
)
# String fields that hold a JSON pointer (RFC 6901).
POINTERS: Final = frozenset({("JsonPatchOperation", "path"), ("JsonPatchOperation", "from")})
# Messages whose integers are counts (at least 0; others: the safe range).
COUNTS: Final = frozenset({"Usage"})
# Value fields JSON requires to be an object (the wire carries any JSON value).
JSON_OBJECTS: Final = frozenset({("Interrupt", "response_schema"), ("Interrupt", "metadata")})
# Repeated fields that need at least this many items.
MIN_ITEMS: Final = MappingProxyType({("RunFinishedEvent", "interrupts"): 1})
# Optional JSON values whose null JSON reads as absent (zod turns it into
# undefined); elsewhere a null is a value only where NULLABLE says so.
NULL_AS_ABSENT: Final = frozenset({("RunAgentInput", "state")})


def _descriptor(message: str) -> Descriptor:
    for module in (events_pb2, types_pb2, patch_pb2):
        desc: Descriptor | None = module.DESCRIPTOR.message_types_by_name.get(message)
        if desc is not None:
            return desc
    raise KeyError(f"no message {message!r} in the generated schema")


def _number(message: str, field: str) -> int:
    """The wire number of ``message.field`` (proto names), read from the descriptors."""
    number: int = _descriptor(message).fields_by_name[field].number
    return number


def _payload(message: str, field: str) -> tuple[str, int]:
    fd = _descriptor(message).fields_by_name[field]
    return fd.json_name, fd.number


# -- wire numbers of the special shapes (all read from the descriptors) -------------


def _arms(union: str) -> dict[str, tuple[int, str]]:
    """A oneof shown as a JSON union on ``type``: arm name -> (number, message)."""
    out = {}
    for fd in sorted(_descriptor(union).fields, key=lambda f: f.number):
        assert fd.message_type is not None
        out[fd.name] = (fd.number, fd.message_type.name)
    return out


# Content parts: JSON `type` -> (InputContent arm number, part message name); the
# JSON type is the arm's name, as @ag-ui/proto maps it.
PART_ARMS: Final = MappingProxyType(_arms("InputContent"))
# Part sources: JSON `type` -> (InputContentSource arm number, source message name).
SOURCE_ARMS: Final = MappingProxyType(_arms("InputContentSource"))

# The arm message's BaseEvent field, and BaseEvent.type (the EventType enum).
BASE_EVENT_NUMBER: Final = _number("TextMessageStartEvent", "base_event")
BASE_TYPE_NUMBER: Final = _number("BaseEvent", "type")

# `content` of a chat message: its JSON type -> the field that carries it.
MESSAGE_CONTENT: Final = MappingProxyType(
    {
        "str": _number("Message", "content"),
        "list": _number("Message", "content_parts"),
        "dict": _number("Message", "activity_content"),
    }
)
# `content` of TOOL_CALL_RESULT: the same, a string or content parts.
TOOL_RESULT_CONTENT: Final = MappingProxyType(
    {
        "str": _number("ToolCallResultEvent", "content"),
        "list": _number("ToolCallResultEvent", "content_parts"),
    }
)

# RUN_FINISHED outcome: the string field its `type` rides in, and per outcome type
# the outcome key whose list rides in which wire field of RunFinishedEvent. Only the
# payload of the named outcome is carried (the reference copies nothing else either).
RUN_OUTCOME_NUMBER: Final = _number("RunFinishedEvent", "outcome")
RUN_OUTCOME_PAYLOAD: Final = MappingProxyType(
    {
        "success": _payload("RunFinishedEvent", "pending_tool_call_ids"),
        "interrupt": _payload("RunFinishedEvent", "interrupts"),
        "cancelled": None,
    }
)
RUN_OUTCOME_REQUIRED: Final = MappingProxyType({"interrupt": ("interrupts",)})
# SUBAGENT_FINISHED outcome: the same for SubagentFinishedEvent.
SUBAGENT_OUTCOME_NUMBER: Final = _number("SubagentFinishedEvent", "outcome")
SUBAGENT_OUTCOME_PAYLOAD: Final = MappingProxyType(
    {
        "success": None,
        "suspended": _payload("SubagentFinishedEvent", "interrupt_ids"),
    }
)

# google.protobuf.Value / Struct / ListValue: a JSON value's carriers.
_V = struct_pb2.Value.DESCRIPTOR.fields_by_name
VALUE_NULL: Final[int] = _V["null_value"].number
VALUE_NUMBER: Final[int] = _V["number_value"].number
VALUE_STRING: Final[int] = _V["string_value"].number
VALUE_BOOL: Final[int] = _V["bool_value"].number
VALUE_STRUCT: Final[int] = _V["struct_value"].number
VALUE_LIST: Final[int] = _V["list_value"].number
STRUCT_FIELDS: Final[int] = struct_pb2.Struct.DESCRIPTOR.fields_by_name["fields"].number
_ENTRY = struct_pb2.Struct.DESCRIPTOR.nested_types_by_name["FieldsEntry"].fields_by_name
STRUCT_KEY: Final[int] = _ENTRY["key"].number  # in a Struct map entry
STRUCT_VALUE: Final[int] = _ENTRY["value"].number
LIST_VALUES: Final[int] = struct_pb2.ListValue.DESCRIPTOR.fields_by_name["values"].number
del _V, _ENTRY

# Protobuf wire types (the encoding, not the schema).
WIRE_VARINT: Final = 0
WIRE_I64: Final = 1
WIRE_LEN: Final = 2
WIRE_SGROUP: Final = 3
WIRE_EGROUP: Final = 4
WIRE_I32: Final = 5


def wire_type(fd: FieldDescriptor) -> int:
    """The wire type a (non-packed) field is written with."""
    if fd.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FIXED64):
        return WIRE_I64
    if fd.type in (FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_FIXED32):
        return WIRE_I32
    if fd.type in (
        FieldDescriptor.TYPE_STRING,
        FieldDescriptor.TYPE_BYTES,
        FieldDescriptor.TYPE_MESSAGE,
    ):
        return WIRE_LEN
    return WIRE_VARINT


# The wire type of each field kind (repeated fields are never packed here: only
# strings and messages repeat).
KIND_WIRE_TYPE: Final = MappingProxyType(
    {
        Kind.STRING: WIRE_LEN,
        Kind.INT64: WIRE_VARINT,
        Kind.BOOL: WIRE_VARINT,
        Kind.VALUE: WIRE_LEN,
        Kind.STRUCT: WIRE_LEN,
        Kind.MESSAGE: WIRE_LEN,
        Kind.PATCH_OP: WIRE_VARINT,
    }
)

# Which wire type carries each Value kind field (null and bool are varints, the
# number a double).
VALUE_WIRE_TYPES: Final = MappingProxyType(
    {fd.number: wire_type(fd) for fd in struct_pb2.Value.DESCRIPTOR.fields}
)

# -- limits --------------------------------------------------------------------------

# JSON nesting levels (objects + arrays) a codec accepts by default, and the most a
# caller may allow (every codec walks JSON on an explicit stack, so the limit is
# about memory and time, not the C stack).
DEFAULT_MAX_DEPTH: Final = 1024
MAX_DEPTH_LIMIT: Final = 10_000
# The binary framing: a 4-byte big-endian length before each ag_ui.Event.
FRAME_HEADER_SIZE: Final = 4
MAX_FRAME_PAYLOAD: Final = 2**32 - 1  # what the prefix can say
# What @ag-ui/client 1.0.0 accepts: 4 + N <= 10 MiB; an SSE event the same size.
DEFAULT_MAX_FRAME_SIZE: Final = 10 * 1024 * 1024 - FRAME_HEADER_SIZE
DEFAULT_MAX_EVENT_SIZE: Final = 10 * 1024 * 1024
# max_events of the whole-buffer decoders (decode, decode_proto), which hold every
# event in memory at once; a stream decoder has none.
DEFAULT_MAX_BATCH_EVENTS: Final = 1_000_000
# orjson's nesting limit (JSON objects + arrays), which the SSE codecs share.
JSON_MAX_NESTING: Final = 1024

# Integers a double holds exactly: JSON integers up to this encode as numbers,
# and integral doubles up to this decode as ``int``.
MAX_EXACT_INT: Final = 2**53


def double_from_integer(value: int) -> float:
    """The double a JavaScript peer holds for the JSON integer ``value``
    (``JSON.parse``, ``Number``), which ``@ag-ui/proto`` then writes: the nearest
    one, and past the largest finite double ±Infinity (IEEE rounding overflows
    there; ``float()`` raises exactly where it does)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def number_from_double(x: float) -> int | float:
    """A JSON number from a ``google.protobuf.Value`` double.

    JSON has one number type and the reference prints ``5``, not ``5.0``, so an
    integral double up to 2**53 comes back as ``int``; ``-0.0`` keeps its sign
    (it does on the wire) and everything else stays ``float``, NaN and the
    infinities included (a non-JSON peer may write them).
    """
    if x.is_integer() and abs(x) <= MAX_EXACT_INT and not (x == 0 and math.copysign(1, x) < 0):
        return int(x)
    return x


# -- derivation from the descriptors ---------------------------------------------

_PACKAGE = "ag_ui"
_VALUE = "google.protobuf.Value"
_STRUCT = "google.protobuf.Struct"


def _kind(fd: FieldDescriptor) -> tuple[Kind, str | None]:
    if fd.type == FieldDescriptor.TYPE_STRING:
        return Kind.STRING, None
    if fd.type == FieldDescriptor.TYPE_INT64:
        return Kind.INT64, None
    if fd.type == FieldDescriptor.TYPE_BOOL:
        return Kind.BOOL, None
    if fd.type == FieldDescriptor.TYPE_ENUM:
        assert fd.enum_type is not None
        if fd.enum_type.full_name == "ag_ui.JsonPatchOperationType":
            return Kind.PATCH_OP, None
        raise _unsupported(fd, "no codec has code for this enum (only JsonPatchOperationType)")
    if fd.type == FieldDescriptor.TYPE_MESSAGE:
        assert fd.message_type is not None
        full = fd.message_type.full_name
        if full == _VALUE:
            return Kind.VALUE, None
        if full == _STRUCT:
            return Kind.STRUCT, None
        package = fd.message_type.file.package
        if package != _PACKAGE:
            # MESSAGES holds ag_ui's only: the codecs would fail later on a bare
            # KeyError (google.protobuf.Timestamp; ListValue too, which they carry
            # inside a Value but not as a field's type).
            raise _unsupported(
                fd, f"no codec has code for a message of package {package or '(none)'} ({_CARRIED})"
            )
        return Kind.MESSAGE, _spec_name(fd.message_type)
    raise _unsupported(fd, f"no codec has code for this type ({_CARRIED})")


# What _kind maps, for the errors: a new scalar type needs code in every codec.
_CARRIED = (
    "they carry string, int64, bool, google.protobuf.Value and Struct, ag_ui messages "
    "and the JsonPatchOperationType enum"
)
# protobuf's type names by FieldDescriptor.TYPE_* number ("double", "bytes", ...)
_TYPE_NAMES: Final = MappingProxyType(
    {
        getattr(FieldDescriptor, name): name.removeprefix("TYPE_").lower()
        for name in dir(FieldDescriptor)
        if name.startswith("TYPE_")
    }
)


def _type_name(fd: FieldDescriptor) -> str:
    if fd.enum_type is not None:
        return f"enum {fd.enum_type.full_name}"
    if fd.message_type is not None:
        if fd.message_type.GetOptions().map_entry:
            key, value = (_type_name(f) for f in fd.message_type.fields)
            return f"map<{key}, {value}>"
        return str(fd.message_type.full_name)
    return _TYPE_NAMES.get(fd.type, f"type {fd.type}")


def _unsupported(fd: FieldDescriptor, reason: str) -> SchemaError:
    """The error for a field no codec carries: Message.field = number, its type, why."""
    assert fd.containing_type is not None
    where = f"{fd.containing_type.name}.{fd.name}"
    map_entry = fd.message_type is not None and fd.message_type.GetOptions().map_entry
    label = "repeated " if fd.is_repeated and not map_entry else ""
    return SchemaError(where, f"{label}{_type_name(fd)} = {fd.number}: {reason}")


def _spec_name(desc: Descriptor) -> str:
    # ToolCall.Function is nested; every other message is top-level in ag_ui.
    name: str = desc.full_name
    return name.removeprefix("ag_ui.").replace(".", "_")


def _field(fd: FieldDescriptor) -> Field:
    kind, message = _kind(fd)
    repeated = fd.is_repeated
    # Shapes no codec has code for fail here, at import, naming the field: the pure
    # twins would crash on them or, for packed scalars, decode [] silently; the C
    # tables refuse them too.
    if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
        raise _unsupported(fd, "no codec has code for a map")
    if repeated and kind not in (Kind.STRING, Kind.MESSAGE):
        raise _unsupported(fd, "only strings and messages repeat (no packed scalars or Values)")
    assert fd.containing_type is not None
    key = (fd.containing_type.name, fd.name)
    if repeated:
        required = key not in _OPTIONAL_REPEATED
    elif key in _VARIANT_REQUIRED:
        required = False
    else:
        # proto3 `optional` is JSON-optional; an implicit-presence scalar or a
        # plain message field (snapshot, function, source...) is required.
        required = not _is_proto3_optional(fd)
    return Field(
        name=fd.json_name,
        number=fd.number,
        kind=kind,
        repeated=repeated,
        presence=fd.has_presence and not repeated,
        required=required,
        nullable=key in NULLABLE,
        message=message,
        omit_empty=key in _OMIT_EMPTY,
        choices=CHOICES.get(key, ()),
        pointer=key in POINTERS,
        minimum=0 if kind is Kind.INT64 and key[0] in COUNTS else -MAX_SAFE_INTEGER,
        json_object=key in JSON_OBJECTS,
        min_items=MIN_ITEMS.get(key, 0),
        null_is_absent=key in NULL_AS_ABSENT,
    )


def _message_spec(desc: Descriptor) -> MessageSpec:
    special = _SPECIAL.get(desc.name, set())
    fields = tuple(
        _field(fd)
        for fd in sorted(desc.fields, key=lambda f: f.number)
        if fd.name not in special and fd.name != "base_event"
    )
    return MessageSpec(_spec_name(desc), fields)


def _is_proto3_optional(fd: FieldDescriptor) -> bool:
    oneof = fd.containing_oneof
    return oneof is not None and oneof.name == "_" + fd.name


def _all_messages(
    files: Sequence[FileDescriptor] = (
        patch_pb2.DESCRIPTOR,
        types_pb2.DESCRIPTOR,
        events_pb2.DESCRIPTOR,
    ),
) -> dict[str, MessageSpec]:
    descs: list[Descriptor] = []
    for file in files:
        for desc in file.message_types_by_name.values():
            if desc.name in ("Event", "BaseEvent"):
                continue
            descs += (desc, *desc.nested_types)
    out = {_spec_name(desc): _message_spec(desc) for desc in descs}
    for desc in descs:
        _check_carried(desc, out[_spec_name(desc)].fields, out)
    return out


def _check_carried(desc: Descriptor, fields: Sequence[Field], messages: Container[str]) -> None:
    """An ag_ui message left out of ``messages`` (nested two deep; Event, BaseEvent)
    as a field's type: the codecs would fail later on a bare KeyError."""
    for f in fields:
        if f.message is not None and f.message not in messages:
            raise _unsupported(
                desc.fields_by_number[f.number],
                "no codec has code for this message (they carry ag_ui's top-level "
                "messages except Event and BaseEvent, and those nested one level)",
            )


def _base_fields(desc: Descriptor, messages: Container[str]) -> tuple[Field, ...]:
    """The fields of BaseEvent besides `type`, which every event carries."""
    fields = tuple(
        _field(fd)
        for fd in sorted(desc.fields, key=lambda f: f.number)
        if fd.number != BASE_TYPE_NUMBER
    )
    _check_carried(desc, fields, messages)
    return fields


def _all_events(messages: dict[str, MessageSpec]) -> dict[str, EventSpec]:
    event = events_pb2.DESCRIPTOR.message_types_by_name["Event"]
    type_enum = events_pb2.DESCRIPTOR.enum_types_by_name["EventType"]
    # The arm message is named after the type: TEXT_MESSAGE_START ->
    # TextMessageStartEvent. Matching by message name, never by number, is what
    # keeps the five arms whose number is not EventType + 1 right.
    by_message = {fd.message_type.name: fd.number for fd in event.fields if fd.message_type}
    out: dict[str, EventSpec] = {}
    for value in type_enum.values:
        message = "".join(p.capitalize() for p in value.name.split("_")) + "Event"
        base = _descriptor(message).fields_by_name.get("base_event")
        if base is None or base.number != BASE_EVENT_NUMBER:
            raise SchemaError(message, f"carries no base_event = {BASE_EVENT_NUMBER}")
        out[value.name] = EventSpec(
            type=value.name,
            arm=by_message[message],
            type_value=value.number,
            message=messages[message],
        )
    return out


MESSAGES: Final = MappingProxyType(_all_messages())
# Message: the fields every role has (id, role), the keys of every role's shape
# (MESSAGE_COMMON: the Message fields no role's shape names: subagentRunId, and a
# field a later schema adds, which @ag-ui/proto writes on any message), and per role
# those its shape adds (ROLE_KEYS); a key of another role is an extra key of a message.
MESSAGE_HEAD: Final = tuple(f for f in MESSAGES["Message"].fields if f.name in ("id", "role"))
MESSAGE_COMMON: Final = tuple(
    f.name
    for f in MESSAGES["Message"].fields
    if f.name not in ("id", "role") and all(f.name not in keys for keys in ROLE_KEYS.values())
)
ROLE_FIELDS: Final = MappingProxyType(
    {
        role: tuple(f for f in MESSAGES["Message"].fields if f.name in (*MESSAGE_COMMON, *keys))
        for role, keys in ROLE_KEYS.items()
    }
)
# JSON pointer syntax (RFC 6901): "" or "/"-separated tokens, "~" only as "~0" or "~1".
JSON_POINTER: Final = re.compile(r"(/([^/~]|~[01])*)*")
# The base fields every event carries in BaseEvent besides `type`.
BASE_FIELDS: Final = _base_fields(_descriptor("BaseEvent"), MESSAGES)
# The outcome payload lists, as the fields they are written as: (number, key) -> Field.
OUTCOME_FIELDS: Final = MappingProxyType(
    {
        (fd.number, fd.json_name): replace(_field(fd), required=False)
        for message, field in (
            ("RunFinishedEvent", "pending_tool_call_ids"),
            ("RunFinishedEvent", "interrupts"),
            ("SubagentFinishedEvent", "interrupt_ids"),
        )
        for fd in (_descriptor(message).fields_by_name[field],)
    }
)
EVENTS: Final = MappingProxyType(_all_events(dict(MESSAGES)))
EVENT_BY_ARM: Final = MappingProxyType({spec.arm: spec for spec in EVENTS.values()})
EVENT_TYPES: Final = tuple(sorted(EVENTS, key=lambda t: EVENTS[t].type_value))

if len(EVENT_BY_ARM) != len(EVENTS) or len(EVENTS) != len(
    events_pb2.DESCRIPTOR.message_types_by_name["Event"].fields
):
    raise SchemaError("Event", "the EventType values and the Event oneof arms do not pair up")
if not (
    ROLE_KEYS.keys() == ROLE_REQUIRED.keys() == ROLE_CONTENT.keys()
    and all(set(ROLE_REQUIRED[r]) <= set(keys) for r, keys in ROLE_KEYS.items())
    and {k for keys in ROLE_KEYS.values() for k in keys} - {"content"}
    <= {f.name for f in MESSAGES["Message"].fields}
    and set(TEXT_MESSAGE_ROLES) <= ROLE_KEYS.keys()
):
    raise SchemaError("ROLE_KEYS", "ROLE_KEYS, ROLE_REQUIRED and ROLE_CONTENT disagree")


def _unruled() -> list[str]:
    """The entries of the JSON rule tables that name no field of the schema."""
    found: dict[str, Descriptor] = {}
    for file in (events_pb2, types_pb2, patch_pb2):
        for desc in file.DESCRIPTOR.message_types_by_name.values():
            found[desc.name] = desc
    keys = [*CHOICES, *POINTERS, *JSON_OBJECTS, *MIN_ITEMS, *NULL_AS_ABSENT]
    out = [f"{m}.{f}" for m, f in keys if m not in found or f not in found[m].fields_by_name]
    return out + [m for m in COUNTS if m not in found]


_UNRULED: Final = _unruled()
if _UNRULED:
    raise SchemaError(", ".join(_UNRULED), "a JSON rule names a field the schema does not have")
