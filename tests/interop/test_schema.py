"""Our schema is wire-identical to ``@ag-ui/proto`` 1.0.0, and our JSON shapes to ``@ag-ui/core``.

Strategy: read the reference as shipped, not a copy of it.

* Wire: parse the ts-proto ``encode`` functions in ``@ag-ui/proto``'s
  ``dist/index.js``: ``writer.uint32(TAG).TYPE(message.F)`` gives number, wire
  type and scalar type; ``X.encode(…, writer.uint32(TAG).fork())`` a message
  field; ``for (const v of message.F)`` a repeated field; the guard
  (``!== void 0`` vs ``!== "" / 0 / false``) explicit vs implicit presence.
  Message-typed fields always test ``!== void 0``, so whether they were declared
  ``optional`` / in a oneof is read from the ts-proto interfaces (``field?:``),
  which ship in ``dist/index.js.map``. Enums come from the compiled enum
  objects. Every line of every encoder must match a known form: a reference
  that changes shape fails here instead of passing vacuously.
* Our side: the same facts from the generated descriptors (``agui_wire._pb``
  and ``google.protobuf.struct_pb2``), compared message by message, field by
  field, in both directions.
* JSON: ``agui_wire.schema``'s ``Field.required`` and its union tables against
  ``@ag-ui/core``'s ``omitOptionalNulls`` shape table and zod object schemas.

The checkers are plain functions returning a list of discrepancies; the
``test_checker_*`` tests feed them mutated copies of either side to prove they
can fail.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import descriptor_pool, struct_pb2
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor, FileDescriptor

from agui_wire import schema
from agui_wire._pb import events_pb2, patch_pb2, types_pb2

pytestmark = pytest.mark.interop

HERE = Path(__file__).resolve().parent
PROTO_DIST = HERE / "node_modules" / "@ag-ui" / "proto" / "dist" / "index.js"
OUR_FILES: tuple[FileDescriptor, ...] = (
    struct_pb2.DESCRIPTOR,
    patch_pb2.DESCRIPTOR,
    types_pb2.DESCRIPTOR,
    events_pb2.DESCRIPTOR,
)

# The Event arms whose number is not EventType + 1 (wire-contract §1.1).
OFF_BY_MORE_THAN_ONE = {
    "TEXT_MESSAGE_CHUNK",
    "TOOL_CALL_CHUNK",
    "SUBAGENT_STARTED",
    "SUBAGENT_FINISHED",
    "SUBAGENT_ERROR",
}


@dataclass(frozen=True)
class WireField:
    """One field as the encoder writes it; the unit both sides are compared in."""

    number: int
    wire_type: int
    kind: str  # writer method ("string", "int64", "int32" (enums too), "bool", "double"),
    #            "message:<ts-proto name>" or "map:<entry ts-proto name>"
    repeated: bool
    presence: str  # "explicit" (!== void 0), "implicit:<default literal>", "repeated"


Wire = dict[str, dict[str, WireField]]  # ts-proto message name -> camelCase field -> field


# -- the reference ---------------------------------------------------------------------

_ENCODER = re.compile(
    r"^const (?P<name>\w+) = \{\n\tencode\(message, writer = new "
    r"_bufbuild_protobuf_wire\.BinaryWriter\(\)\) \{\n(?P<body>.*?)\n\t\treturn writer;\n",
    re.MULTILINE | re.DOTALL,
)
_TAG = r"writer\.uint32\((?P<tag>\d+)\)"
_STATEMENTS = (
    # if (message.f !== "") writer.uint32(18).string(message.f);
    re.compile(
        r'if \(message\.(?P<f>\w+) !== (?P<guard>void 0|""|0|false)\) '
        + _TAG
        + r"\.(?P<method>\w+)\(message\.(?P=f)\);"
    ),
    # if (message.f !== void 0) X.encode(message.f, writer.uint32(26).fork()).join();
    re.compile(
        r"if \(message\.(?P<f>\w+) !== (?P<guard>void 0)\) (?P<type>\w+)\.encode\("
        r"message\.(?P=f), " + _TAG + r"\.fork\(\)\)\.join\(\);"
    ),
    # if (message.f !== void 0) Value.encode(Value.wrap(message.f), writer.uint32(34)...
    re.compile(
        r"if \(message\.(?P<f>\w+) !== (?P<guard>void 0)\) (?P<type>\w+)\.encode\("
        r"(?P=type)\.wrap\(message\.(?P=f)\), " + _TAG + r"\.fork\(\)\)\.join\(\);"
    ),
    # for (const v of message.f) X.encode(v, writer.uint32(42).fork()).join();
    re.compile(
        r"for \(const v of message\.(?P<f>\w+)\) (?P<type>\w+)\.encode\(v, "
        + _TAG
        + r"\.fork\(\)\)\.join\(\);"
    ),
    # for (const v of message.values) Value.encode(Value.wrap(v), writer.uint32(10).fork()).join();
    re.compile(
        r"for \(const v of message\.(?P<f>\w+)\) (?P<type>\w+)\.encode\((?P=type)\.wrap\(v\), "
        + _TAG
        + r"\.fork\(\)\)\.join\(\);"
    ),
    # for (const v of message.f) writer.uint32(42).string(v);
    re.compile(r"for \(const v of message\.(?P<f>\w+)\) " + _TAG + r"\.(?P<method>\w+)\(v\);"),
    # Struct.fields, a map: one entry message per key.
    re.compile(
        r"Object\.entries\(message\.(?P<f>\w+)\)\.forEach\(\(\[key, value\]\) => \{\s*"
        r"if \(value !== void 0\) (?P<map>\w+)\.encode\(\{\s*key,\s*value\s*\}, "
        + _TAG
        + r"\.fork\(\)\)\.join\(\);\s*\}\);"
    ),
)
_WIRE_TYPES = {"string": 2, "int64": 0, "int32": 0, "bool": 0, "double": 1}
_DEFAULT_FOR = {"string": '""', "int64": "0", "int32": "0", "bool": "false", "double": "0"}


class UnrecognizedEncoder(AssertionError):
    """A statement in a ts-proto encoder that the checker does not know."""


def reference_wire(js: str) -> Wire:
    """Every message's fields as the ts-proto encoders in ``js`` write them."""
    out: Wire = {}
    for block in _ENCODER.finditer(js):
        name, body = block["name"], block["body"]
        fields: dict[str, WireField] = {}
        pos = 0
        while True:
            while pos < len(body) and body[pos].isspace():
                pos += 1
            if pos == len(body):
                break
            for statement in _STATEMENTS:
                m = statement.match(body, pos)
                if m:
                    break
            else:
                line = body[pos:].split("\n", 1)[0]
                raise UnrecognizedEncoder(f"{name}.encode: unrecognised statement {line!r}")
            pos = m.end()
            groups = m.groupdict()
            tag = int(groups["tag"])
            if groups.get("map"):
                kind, repeated, presence = f"map:{groups['map']}", True, "repeated"
            elif groups.get("type"):
                kind = f"message:{groups['type']}"
                repeated = "guard" not in groups or groups["guard"] is None
                presence = "repeated" if repeated else "explicit"
            else:
                kind = groups["method"]
                repeated = groups.get("guard") is None
                if repeated:
                    presence = "repeated"
                elif groups["guard"] == "void 0":
                    presence = "explicit"
                else:
                    presence = f"implicit:{groups['guard']}"
            if groups["f"] in fields:
                raise UnrecognizedEncoder(f"{name}.{groups['f']} written twice")
            fields[groups["f"]] = WireField(tag >> 3, tag & 7, kind, repeated, presence)
        out[name] = fields
    if not out:
        raise UnrecognizedEncoder("no ts-proto encoders found")
    return out


_ENUM = re.compile(
    r"^let \w+(?:\$\d+)? = /\* @__PURE__ \*/ function\((?P<name>\w+)\) \{\n"
    r"(?P<body>.*?)\n\treturn ",
    re.MULTILINE | re.DOTALL,
)
_ENUM_VALUE = re.compile(r'(\w+)\[\1\["(?P<key>\w+)"\] = (?P<value>-?\d+)\] = "(?P=key)";')


def reference_enums(js: str) -> dict[str, dict[str, int]]:
    """The compiled enums, without ts-proto's own UNRECOGNIZED = -1."""
    out = {}
    for m in _ENUM.finditer(js):
        values = {v["key"]: int(v["value"]) for v in _ENUM_VALUE.finditer(m["body"])}
        values.pop("UNRECOGNIZED", None)
        out[m["name"]] = values
    return out


_INTERFACE = re.compile(r"^export interface (?P<name>\w+) \{\n(?P<body>.*?)\n\}", re.M | re.S)
_MEMBER = re.compile(r"^  (?P<f>\w+)(?P<opt>\??):(?P<type>[^;]*);", re.MULTILINE)


def reference_interfaces(ts_sources: Iterable[str]) -> dict[str, dict[str, tuple[bool, str]]]:
    """ts-proto interfaces: message -> field -> (declared optional ``?:``, TS type)."""
    out = {}
    for source in ts_sources:
        for m in _INTERFACE.finditer(source):
            # Comments may contain ';' and ':' — drop them before matching members.
            body = re.sub(r"/\*.*?\*/", "", m["body"], flags=re.S)
            out[m["name"]] = {
                f["f"]: (f["opt"] == "?", " ".join(f["type"].split()))
                for f in _MEMBER.finditer(body)
            }
    return out


def reference_envelope(js: str) -> dict[str, str]:
    """proto.ts's ENVELOPE_TYPE: Event arm (camelCase) -> JSON ``type``."""
    m = re.search(r"^const ENVELOPE_TYPE = \{\n(.*?)\n\};", js, re.M | re.S)
    assert m, "no ENVELOPE_TYPE table in @ag-ui/proto"
    return dict(re.findall(r'^\t(\w+): "(\w+)",?$', m[1], re.M))


def generated_sources(js_path: Path) -> list[str]:
    """The ts-proto sources shipped in the source map (``src/generated/**``)."""
    smap = json.loads(js_path.with_name(js_path.name + ".map").read_text())
    return [
        text
        for src, text in zip(smap["sources"], smap["sourcesContent"], strict=True)
        if "/generated/" in src
    ]


# -- our side ----------------------------------------------------------------------------

_METHOD_FOR = {
    FieldDescriptor.TYPE_STRING: "string",
    FieldDescriptor.TYPE_INT64: "int64",
    FieldDescriptor.TYPE_INT32: "int32",
    FieldDescriptor.TYPE_ENUM: "int32",  # ts-proto writes enums as int32
    FieldDescriptor.TYPE_BOOL: "bool",
    FieldDescriptor.TYPE_DOUBLE: "double",
}


def ts_name(desc: Descriptor | EnumDescriptor) -> str:
    """ts-proto's name: package dropped, nesting joined by ``_``."""
    return desc.full_name.removeprefix(desc.file.package + ".").replace(".", "_")


def all_messages(files: Iterable[FileDescriptor]) -> dict[str, Descriptor]:
    out: dict[str, Descriptor] = {}

    def walk(desc: Descriptor) -> None:
        out[ts_name(desc)] = desc
        for nested in desc.nested_types:
            walk(nested)

    for f in files:
        for desc in f.message_types_by_name.values():
            walk(desc)
    return out


def our_wire(files: Iterable[FileDescriptor]) -> Wire:
    """What a ts-proto encoder generated from our descriptors would write."""
    out: Wire = {}
    for name, desc in all_messages(files).items():
        fields = {}
        for fd in desc.fields:
            if fd.type == FieldDescriptor.TYPE_MESSAGE:
                target = ts_name(fd.message_type)
                is_map = fd.message_type.GetOptions().map_entry
                kind = f"map:{target}" if is_map else f"message:{target}"
                wire_type = 2
            else:
                if fd.type not in _METHOD_FOR:
                    raise AssertionError(f"{fd.full_name}: type {fd.type} not in the checker")
                kind = _METHOD_FOR[fd.type]
                wire_type = _WIRE_TYPES[kind]
            if fd.is_repeated:
                if fd.type != FieldDescriptor.TYPE_MESSAGE and kind != "string":
                    raise AssertionError(f"{fd.full_name}: packed repeated not in the checker")
                presence = "repeated"
            elif fd.has_presence:
                presence = "explicit"
            else:
                presence = f"implicit:{_DEFAULT_FOR[kind]}"
            fields[fd.json_name] = WireField(fd.number, wire_type, kind, fd.is_repeated, presence)
        out[name] = fields
    return out


def compare_wire(reference: Wire, ours: Wire) -> list[str]:
    """Every difference between two ``Wire`` tables, both directions."""
    problems = []
    for name in sorted(reference.keys() | ours.keys()):
        if name not in ours:
            problems.append(f"{name}: a reference message we do not have")
            continue
        if name not in reference:
            problems.append(f"{name}: our message is unknown to the reference")
            continue
        ref, own = reference[name], ours[name]
        for f in sorted(ref.keys() | own.keys()):
            if f not in own:
                problems.append(f"{name}.{f}: reference field {ref[f]} missing from ours")
            elif f not in ref:
                problems.append(f"{name}.{f}: our field {own[f]} is not in the reference")
            elif ref[f] != own[f]:
                problems.append(f"{name}.{f}: reference {ref[f]} != ours {own[f]}")
    return problems


def compare_declarations(
    interfaces: Mapping[str, Mapping[str, tuple[bool, str]]], files: Iterable[FileDescriptor]
) -> list[str]:
    """``field?:`` in the ts-proto interfaces vs oneof / proto3 ``optional`` in ours.

    Catches what the encoders cannot show: a message field declared ``optional``
    on one side only. Also checks enum-typed fields name the same enum.
    """
    problems = []
    for name, desc in all_messages(files).items():
        if desc.GetOptions().map_entry:
            continue  # ts-proto types map entries loosely ({ [key]: any })
        iface = interfaces.get(name)
        if iface is None:
            problems.append(f"{name}: no ts-proto interface")
            continue
        for fd in desc.fields:
            if fd.json_name not in iface:
                problems.append(f"{name}.{fd.json_name}: not in the ts-proto interface")
                continue
            optional, ts_type = iface[fd.json_name]
            declared = fd.containing_oneof is not None and not fd.is_repeated
            if optional != declared:
                problems.append(
                    f"{name}.{fd.json_name}: reference optional={optional}, ours={declared}"
                )
            if fd.type == FieldDescriptor.TYPE_ENUM and fd.enum_type.name not in ts_type.split():
                problems.append(f"{name}.{fd.json_name}: enum {ts_type} != {fd.enum_type.name}")
    return problems


def our_enums(files: Iterable[FileDescriptor]) -> dict[str, dict[str, int]]:
    return {
        e.name: {v.name: v.number for v in e.values}
        for f in files
        for e in f.enum_types_by_name.values()
    }


def check_wire(js: str, ts_sources: Sequence[str], files: Sequence[FileDescriptor]) -> list[str]:
    """All wire discrepancies between the reference bundle and our descriptors."""
    problems = compare_wire(reference_wire(js), our_wire(files))
    problems += compare_declarations(reference_interfaces(ts_sources), files)
    ref_enums, own_enums = reference_enums(js), our_enums(files)
    if ref_enums != own_enums:
        problems.append(f"enums: reference {ref_enums} != ours {own_enums}")
    return problems


# -- fixtures ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def proto_js(node_harness) -> str:
    # node_harness: installs node_modules; the files are then read directly.
    return PROTO_DIST.read_text()


@pytest.fixture(scope="module")
def proto_ts(node_harness) -> list[str]:
    return generated_sources(PROTO_DIST)


# -- the wire ------------------------------------------------------------------------


def test_reference_parse_is_complete(proto_js: str) -> None:
    """The parser saw every ts-proto message the bundle defines, with plausible counts."""
    wire = reference_wire(proto_js)
    consts_with_encode = re.findall(r"^const (\w+) = \{\n\tencode\(", proto_js, re.M)
    assert sorted(wire) == sorted(consts_with_encode)
    assert len(wire["Event"]) == 31
    assert len(wire) == 57  # struct.proto 4, patch.proto 1, types.proto 18, events.proto 34


def test_wire_schema_identical(proto_js: str, proto_ts: list[str]) -> None:
    assert check_wire(proto_js, proto_ts, OUR_FILES) == []


def test_event_arms_and_types(proto_js: str) -> None:
    """Oneof arm numbers, EventType values and ENVELOPE_TYPE agree, on both sides."""
    wire = reference_wire(proto_js)["Event"]
    event_type = reference_enums(proto_js)["EventType"]
    envelope = reference_envelope(proto_js)
    assert sorted(envelope) == sorted(wire)
    ours = events_pb2.DESCRIPTOR.message_types_by_name["Event"]
    assert {fd.containing_oneof.name for fd in ours.fields} == {"event"}

    off = set()
    for arm, field in wire.items():
        type_ = envelope[arm]
        message = "".join(p.capitalize() for p in type_.split("_")) + "Event"
        assert field.kind == f"message:{message}", arm
        assert ours.fields_by_camelcase_name[arm].number == field.number
        spec = schema.EVENTS[type_]
        assert (spec.arm, spec.type_value, spec.message.name) == (
            field.number,
            event_type[type_],
            message,
        )
        if field.number != event_type[type_] + 1:
            off.add(type_)
    assert off == OFF_BY_MORE_THAN_ONE
    assert len(schema.EVENTS) == len(event_type) == 31


# -- the checker can fail ------------------------------------------------------------------


def _mutated_files(mutate) -> tuple[FileDescriptor, ...]:
    """Our four files in a fresh pool, events.proto edited by ``mutate(FileDescriptorProto)``."""
    from google.protobuf import descriptor_pb2

    pool = descriptor_pool.DescriptorPool()
    out = []
    for f in OUR_FILES:
        proto = descriptor_pb2.FileDescriptorProto()
        f.CopyToProto(proto)
        if f is events_pb2.DESCRIPTOR:
            mutate(proto)
        out.append(pool.AddSerializedFile(proto.SerializeToString()))
    return tuple(out)


def _field(proto, message: str, field: str):
    msg = next(m for m in proto.message_type if m.name == message)
    return msg, next(f for f in msg.field if f.name == field)


def test_checker_unmutated_copy_passes(proto_js: str, proto_ts: list[str]) -> None:
    assert check_wire(proto_js, proto_ts, _mutated_files(lambda proto: None)) == []


def test_checker_catches_our_field_number(proto_js: str, proto_ts: list[str]) -> None:
    def mutate(proto) -> None:
        _field(proto, "TextMessageContentEvent", "delta")[1].number = 9

    problems = check_wire(proto_js, proto_ts, _mutated_files(mutate))
    assert problems == [
        "TextMessageContentEvent.delta: reference WireField(number=3, wire_type=2, kind='string', "
        "repeated=False, presence='implicit:\"\"') != ours WireField(number=9, wire_type=2, "
        "kind='string', repeated=False, presence='implicit:\"\"')"
    ]


def test_checker_catches_our_arm_number(proto_js: str, proto_ts: list[str]) -> None:
    def mutate(proto) -> None:  # the classic mistake: arm = EventType + 1
        _field(proto, "Event", "text_message_chunk")[1].number = 32

    problems = check_wire(proto_js, proto_ts, _mutated_files(mutate))
    assert len(problems) == 1
    assert problems[0].startswith("Event.textMessageChunk:")


def test_checker_catches_our_presence(proto_js: str, proto_ts: list[str]) -> None:
    def mutate(proto) -> None:  # drop proto3 `optional` from a string field
        msg, fd = _field(proto, "TextMessageStartEvent", "role")
        fd.ClearField("proto3_optional")
        fd.ClearField("oneof_index")
        del msg.oneof_decl[0]  # _role is the first synthetic oneof
        for other in msg.field:
            if other.HasField("oneof_index"):
                other.oneof_index -= 1

    problems = check_wire(proto_js, proto_ts, _mutated_files(mutate))
    assert any("TextMessageStartEvent.role" in p and "implicit" in p for p in problems)
    assert any(
        "TextMessageStartEvent.role: reference optional=True, ours=False" in p for p in problems
    )


def test_checker_catches_message_presence_only_in_declarations(
    proto_js: str, proto_ts: list[str]
) -> None:
    """A message field losing ``optional`` changes no encoder line, only the interface."""

    def mutate(proto) -> None:
        msg, fd = _field(proto, "RunStartedEvent", "input")
        index = fd.oneof_index
        fd.ClearField("proto3_optional")
        fd.ClearField("oneof_index")
        del msg.oneof_decl[index]
        for other in msg.field:
            if other.HasField("oneof_index") and other.oneof_index > index:
                other.oneof_index -= 1

    problems = check_wire(proto_js, proto_ts, _mutated_files(mutate))
    assert problems == ["RunStartedEvent.input: reference optional=True, ours=False"]


def test_checker_catches_type_and_repetition(proto_js: str, proto_ts: list[str]) -> None:
    from google.protobuf import descriptor_pb2 as d

    def mutate(proto) -> None:
        _field(proto, "TextMessageEndEvent", "message_id")[
            1
        ].type = d.FieldDescriptorProto.TYPE_INT64
        _field(proto, "RunFinishedEvent", "pending_tool_call_ids")[
            1
        ].label = d.FieldDescriptorProto.LABEL_OPTIONAL

    problems = check_wire(proto_js, proto_ts, _mutated_files(mutate))
    assert [p.split(":")[0] for p in problems] == [
        "RunFinishedEvent.pendingToolCallIds",
        "TextMessageEndEvent.messageId",
    ]
    assert "kind='int64'" in problems[1]
    assert "wire_type=0" in problems[1]


def test_checker_catches_reference_changes(proto_js: str, proto_ts: list[str]) -> None:
    """Edits to (a copy of) the reference bundle surface too."""
    retagged = proto_js.replace(
        'if (message.delta !== "") writer.uint32(26).string(message.delta);',
        'if (message.delta !== "") writer.uint32(34).string(message.delta);',
        1,
    )
    assert retagged != proto_js
    assert [p.split(":")[0] for p in check_wire(retagged, proto_ts, OUR_FILES)] == [
        "TextMessageContentEvent.delta"
    ]

    explicit = proto_js.replace(
        'if (message.messageId !== "") writer.uint32(18).string(message.messageId);',
        "if (message.messageId !== void 0) writer.uint32(18).string(message.messageId);",
        1,
    )
    assert explicit != proto_js
    assert [p.split(":")[0] for p in check_wire(explicit, proto_ts, OUR_FILES)] == [
        "TextMessageStartEvent.messageId"
    ]

    dropped = proto_js.replace(
        "\t\tfor (const v of message.interruptIds) writer.uint32(42).string(v);\n", "", 1
    )
    assert dropped != proto_js
    assert check_wire(dropped, proto_ts, OUR_FILES) == [
        "SubagentFinishedEvent.interruptIds: our field WireField(number=5, wire_type=2, "
        "kind='string', repeated=True, presence='repeated') is not in the reference"
    ]

    enum = proto_js.replace(
        'EventType["TOOL_CALL_RESULT"] = 21]', 'EventType["TOOL_CALL_RESULT"] = 22]'
    )
    assert enum != proto_js
    assert [p[:6] for p in check_wire(enum, proto_ts, OUR_FILES)] == ["enums:"]

    unknown = proto_js.replace(
        'if (message.path !== "") writer.uint32(18).string(message.path);',
        "writer.uint32(18).string(message.path);",
        1,
    )
    with pytest.raises(UnrecognizedEncoder, match=r"JsonPatchOperation\.encode"):
        reference_wire(unknown)


# -- JSON requiredness --------------------------------------------------------------------


def _required(keys: Mapping[str, bool]) -> set[str]:
    return {k for k, optional in keys.items() if not optional}


def check_json(
    shapes: Mapping[str, Any],
    zod: Mapping[str, Mapping[str, bool]],
    messages: Mapping[str, schema.MessageSpec],
    events: Mapping[str, schema.EventSpec],
    role_keys: Mapping[str, Sequence[str]] = schema.ROLE_KEYS,
) -> list[str]:
    """``agui_wire.schema`` requiredness vs the reference's JSON shapes.

    1:1 objects (events, tool calls, tools, parts, sources, ...): every JSON key
    our spec maps exists in the reference and is required there iff our
    ``Field.required``; every reference key is mapped, a base field, the
    discriminator, or one of the keys a special rule handles. Unions (messages
    by role, patch ops, outcomes): the per-variant tables of ``schema``.
    """
    problems: list[str] = []

    def variants(union: str) -> dict[str, str]:
        return dict(shapes[union]["variants"])

    pairs: dict[str, str] = {
        "ToolCall": "ToolCall",
        "ToolCall_Function": "FunctionCall",
        "Tool": "Tool",
        "Context": "Context",
        "ResumeEntry": "ResumeEntry",
        "RunAgentInput": "RunAgentInput",
        "Interrupt": "Interrupt",
        "Usage": "TokenUsage",
    }
    for table, union in ((schema.PART_ARMS, "ContentPart"), (schema.SOURCE_ARMS, "PartSource")):
        if set(table) != set(variants(union)):
            problems.append(f"{union}: variants {sorted(variants(union))} != ours {sorted(table)}")
        for tag, (_, message) in table.items():
            if tag in variants(union):
                pairs[message] = variants(union)[tag]
    event_variants = variants("Event")
    if set(events) != set(event_variants):
        problems.append(f"Event: types {sorted(event_variants)} != ours {sorted(events)}")
    special_keys: dict[str, set[str]] = {
        "ToolCallResultEvent": {"content"},
        "RunFinishedEvent": {"outcome"},
        "SubagentFinishedEvent": {"outcome"},
    }
    base = {f.name for f in schema.BASE_FIELDS}
    for type_, spec in events.items():
        if type_ in event_variants:
            if event_variants[type_] != spec.message.name:
                problems.append(f"{type_}: reference shape {event_variants[type_]}")
            pairs[spec.message.name] = event_variants[type_]

    for ours_name, ref_name in sorted(pairs.items()):
        spec = messages[ours_name]
        keys = zod.get(ref_name)
        if keys is None:
            problems.append(f"{ours_name}: no reference object schema {ref_name}")
            continue
        optional = set(shapes[ref_name]["optional"])
        if optional != keys.keys() - _required(keys):
            problems.append(f"{ref_name}: the reference's shapes and zod disagree")
        for f in spec.fields:
            if f.name not in keys:
                problems.append(f"{ours_name}.{f.name}: not a key of reference {ref_name}")
            elif f.required != (f.name not in optional):
                problems.append(
                    f"{ours_name}.{f.name}: ours required={f.required}, "
                    f"reference required={f.name not in optional}"
                )
        is_event = ours_name.endswith("Event")
        allowed = {f.name for f in spec.fields} | special_keys.get(ours_name, set())
        if is_event:
            allowed |= base | {"type"}
            if not base <= optional:
                problems.append(f"{ref_name}: base fields {base - optional} required")
        if (
            ref_name in variants("ContentPart").values()
            or ref_name in variants("PartSource").values()
        ):
            allowed.add("type")
        for key in sorted(keys.keys() - allowed):
            problems.append(f"{ref_name}.{key}: reference key our {ours_name} spec does not map")
    if any(f.required for f in schema.BASE_FIELDS):
        problems.append("BASE_FIELDS: a base field is required")

    # Message: a union on role over one wire message.
    message = messages["Message"]
    always = {f.name for f in message.fields if f.required}
    names = {f.name for f in message.fields} | {"content"}
    if set(schema.ROLE_REQUIRED) != set(variants("Message")):
        problems.append(
            f"Message roles {sorted(variants('Message'))} != {sorted(schema.ROLE_REQUIRED)}"
        )
    for role, variant in variants("Message").items():
        keys = zod[variant]
        expected = always | set(schema.ROLE_REQUIRED.get(role, ()))
        if _required(keys) != expected:
            problems.append(
                f"Message[{role}]: required {sorted(_required(keys))} != ours {sorted(expected)}"
            )
        for key in sorted(keys.keys() - names):
            problems.append(f"Message[{role}].{key}: not mapped")
        own = [k for k in keys if k not in ("id", "role", "subagentRunId")]
        if own != list(role_keys.get(role, ())):
            problems.append(
                f"Message[{role}]: keys {own} != ROLE_KEYS {list(role_keys.get(role, ()))}"
            )

    # JsonPatchOperation: a union on op.
    patch = messages["JsonPatchOperation"]
    always = {f.name for f in patch.fields if f.required}
    names = {f.name for f in patch.fields}
    if list(schema.PATCH_OPS) != list(variants("JsonPatchOperation")):
        problems.append(
            f"patch ops {list(variants('JsonPatchOperation'))} != {list(schema.PATCH_OPS)}"
        )
    for op, variant in variants("JsonPatchOperation").items():
        keys = zod[variant]
        expected = always | set(schema.OP_REQUIRED.get(op, ()))
        if _required(keys) != expected:
            problems.append(
                f"patch[{op}]: required {sorted(_required(keys))} != ours {sorted(expected)}"
            )
        for key in sorted(keys.keys() - names):
            problems.append(f"patch[{op}].{key}: not mapped")

    # Outcomes: a JSON object flattened onto the finished event.
    for union, payload, required, message_name in (
        (
            "RunFinishedOutcome",
            schema.RUN_OUTCOME_PAYLOAD,
            schema.RUN_OUTCOME_REQUIRED,
            "RunFinishedEvent",
        ),
        ("SubagentFinishedOutcome", schema.SUBAGENT_OUTCOME_PAYLOAD, {}, "SubagentFinishedEvent"),
    ):
        if set(payload) != set(variants(union)):
            problems.append(
                f"{union}: variants {sorted(variants(union))} != ours {sorted(payload)}"
            )
        for type_, variant in variants(union).items():
            keys = zod[variant]
            carried = payload.get(type_)
            extra = keys.keys() - {"type"} - ({carried[0]} if carried else set())
            if extra:
                problems.append(f"{union}[{type_}]: keys {sorted(extra)} not carried")
            if _required(keys) - {"type"} != set(required.get(type_, ())):
                problems.append(f"{union}[{type_}]: required {sorted(_required(keys))}")
            if carried:
                desc = events_pb2.DESCRIPTOR.message_types_by_name[message_name]
                by_number = {fd.number: fd.json_name for fd in desc.fields}
                if by_number.get(carried[1]) != carried[0]:
                    problems.append(f"{union}[{type_}]: field {carried[1]} is not {carried[0]}")
    return problems


@pytest.fixture(scope="module")
def json_shapes(node_harness) -> tuple[dict[str, Any], dict[str, dict[str, bool]]]:
    return node_harness.shapes(), node_harness.zod_objects()


def test_json_requiredness_matches_core(json_shapes) -> None:
    shapes, zod = json_shapes
    assert check_json(shapes, zod, schema.MESSAGES, schema.EVENTS) == []


def test_json_checker_can_fail(json_shapes) -> None:
    shapes, zod = json_shapes
    messages = dict(schema.MESSAGES)
    events = dict(schema.EVENTS)

    # A required field made optional, an optional one made required.
    tc = messages["ToolCall"]
    messages["ToolCall"] = replace(
        tc,
        fields=tuple(
            replace(f, required=not f.required) if f.name == "id" else f for f in tc.fields
        ),
    )
    usage = messages["Usage"]
    messages["Usage"] = replace(
        usage,
        fields=tuple(replace(f, required=True) if f.name == "model" else f for f in usage.fields),
    )
    # A reference key we forgot to map.
    start = events["TEXT_MESSAGE_START"].message
    forgot = replace(start, fields=tuple(f for f in start.fields if f.name != "name"))
    messages[start.name] = forgot
    events["TEXT_MESSAGE_START"] = replace(events["TEXT_MESSAGE_START"], message=forgot)

    # A role key table that lost a key.
    role_keys = {
        **schema.ROLE_KEYS,
        "tool": ("content", "toolCallId", "encryptedValue", "metadata"),
    }

    problems = check_json(shapes, zod, messages, events, role_keys)
    assert sorted(problems) == sorted(
        [
            "ToolCall.id: ours required=False, reference required=True",
            "Usage.model: ours required=True, reference required=False",
            "TextMessageStartEvent.name: reference key our TextMessageStartEvent spec does not map",
            "Message[tool]: keys ['content', 'toolCallId', 'error', 'encryptedValue', 'metadata']"
            " != ROLE_KEYS ['content', 'toolCallId', 'encryptedValue', 'metadata']",
        ]
    )
