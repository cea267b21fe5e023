"""agui_wire.schema: the wire facts every codec reads are the ones the descriptors
say, and they are the AG-UI 1.0 numbers docs/wire-format.md
states: a derivation that read the wrong field would move bytes on the wire.

The codecs are held to these facts by the differential and interop suites; the
evolution drill (tests/evolution) grows the schema and checks every backend.
"""

from __future__ import annotations

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, struct_pb2, timestamp_pb2
from google.protobuf.descriptor import Descriptor, FileDescriptor

from agui_wire import schema
from agui_wire._pb import events_pb2, types_pb2
from agui_wire.errors import AguiWireError, SchemaError


def test_special_shapes_are_the_documented_numbers() -> None:
    assert dict(schema.MESSAGE_CONTENT) == {"str": 3, "list": 8, "dict": 13}
    assert dict(schema.TOOL_RESULT_CONTENT) == {"str": 5, "list": 7}
    assert (schema.RUN_OUTCOME_NUMBER, schema.SUBAGENT_OUTCOME_NUMBER) == (5, 4)
    assert dict(schema.RUN_OUTCOME_PAYLOAD) == {
        "success": ("pendingToolCallIds", 8),
        "interrupt": ("interrupts", 6),
        "cancelled": None,
    }
    assert dict(schema.SUBAGENT_OUTCOME_PAYLOAD) == {
        "success": None,
        "suspended": ("interruptIds", 5),
    }
    assert (schema.BASE_EVENT_NUMBER, schema.BASE_TYPE_NUMBER) == (1, 1)
    assert [(f.name, f.number, f.kind) for f in schema.BASE_FIELDS] == [
        ("timestamp", 2, schema.Kind.INT64),
        ("rawEvent", 3, schema.Kind.VALUE),
        ("metadata", 4, schema.Kind.STRUCT),
    ]
    assert {k: v[0] for k, v in schema.PART_ARMS.items()} == {
        "text": 1,
        "image": 2,
        "audio": 3,
        "video": 4,
        "document": 5,
    }
    assert {k: v[0] for k, v in schema.SOURCE_ARMS.items()} == {"data": 1, "url": 2, "file": 3}


def test_json_value_numbers_and_wire_types() -> None:
    numbers = (
        schema.VALUE_NULL,
        schema.VALUE_NUMBER,
        schema.VALUE_STRING,
        schema.VALUE_BOOL,
        schema.VALUE_STRUCT,
        schema.VALUE_LIST,
    )
    assert numbers == (1, 2, 3, 4, 5, 6)
    assert dict(schema.VALUE_WIRE_TYPES) == {1: 0, 2: 1, 3: 2, 4: 0, 5: 2, 6: 2}
    entry = (schema.STRUCT_FIELDS, schema.STRUCT_KEY, schema.STRUCT_VALUE, schema.LIST_VALUES)
    assert entry == (1, 1, 2, 1)
    # and protobuf agrees on the bytes: Value{string_value: "a"} is 1a 01 61
    assert struct_pb2.Value(string_value="a").SerializeToString() == bytes(
        [(schema.VALUE_STRING << 3) | schema.WIRE_LEN, 1, ord("a")]
    )


def test_outcome_fields_are_the_wire_fields() -> None:
    for (number, key), f in schema.OUTCOME_FIELDS.items():
        assert (f.number, f.name) == (number, key)
        assert f.repeated
        assert not f.required  # the outcome's own rules say when it is required
    fd = events_pb2.RunFinishedEvent.DESCRIPTOR.fields_by_number[8]
    assert fd.json_name == "pendingToolCallIds"


def test_every_message_field_is_in_its_spec_or_a_special_shape() -> None:
    # nothing on the wire is left out of both: a field neither 1:1 nor special would
    # be dropped by every codec
    special = {
        "Message": {"content", "content_parts", "activity_content"},
        "ToolCallResultEvent": {"content", "content_parts"},
        "RunFinishedEvent": {"outcome", "interrupts", "pending_tool_call_ids"},
        "SubagentFinishedEvent": {"outcome", "interrupt_ids"},
    }
    for module in (events_pb2, types_pb2):
        for desc in module.DESCRIPTOR.message_types_by_name.values():
            if desc.name in ("Event", "BaseEvent", "InputContent", "InputContentSource"):
                continue
            spec = schema.MESSAGES[desc.name]
            covered = {f.number for f in spec.fields}
            for fd in desc.fields:
                if fd.name == "base_event" or fd.name in special.get(desc.name, ()):
                    continue
                assert fd.number in covered, f"{desc.name}.{fd.name}"


def test_limits() -> None:
    assert (schema.DEFAULT_MAX_DEPTH, schema.MAX_DEPTH_LIMIT) == (1024, 10_000)
    assert schema.MAX_SAFE_INTEGER == 2**53 - 1 == schema.MAX_EXACT_INT - 1
    assert schema.DEFAULT_MAX_FRAME_SIZE + schema.FRAME_HEADER_SIZE == 10 * 1024 * 1024
    assert schema.MAX_FRAME_PAYLOAD == 2**32 - 1


# A field of each kind no codec has code for, in a message of its own, as protoc
# would describe `message Grown { optional double ratio = 1; ...; map<string, int64>
# labels = 9; ...; Other other = 12; }` (the evolution drill's unmapped-* variants
# grow the real schema so): field -> the type the error names. Messages of another
# package than ag_ui (Grown's own, scratch, among them) are not carried: Value and
# Struct are the only ones the codecs know, and ListValue only inside a Value.
_FIELD_TYPES = {
    "ratio": "double",
    "blob": "bytes",
    "small": "int32",
    "f": "float",
    "big": "uint64",
    "colour": "enum scratch.Colour",
    "counts": "repeated int64",
    "values": "repeated google.protobuf.Value",
    "labels": "map<string, int64>",
    "created": "google.protobuf.Timestamp",
    "items": "google.protobuf.ListValue",
    "other": "scratch.Other",
}


def _grown() -> Descriptor:
    """scratch.Grown, built by hand (no protoc in the unit tests)."""
    pool = descriptor_pool.DescriptorPool()
    for dependency in (struct_pb2, timestamp_pb2):
        pool.Add(descriptor_pb2.FileDescriptorProto.FromString(dependency.DESCRIPTOR.serialized_pb))
    f = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(
        name="scratch.proto",
        package="scratch",
        syntax="proto3",
        dependency=["google/protobuf/struct.proto", "google/protobuf/timestamp.proto"],
    )
    file.enum_type.add(name="Colour").value.add(name="RED", number=0)
    file.message_type.add(name="Other").field.add(
        name="text", number=1, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL
    )
    grown = file.message_type.add(name="Grown")
    entry = grown.nested_type.add(name="LabelsEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=f.TYPE_INT64, label=f.LABEL_OPTIONAL)
    scalars = [
        ("ratio", f.TYPE_DOUBLE),
        ("blob", f.TYPE_BYTES),
        ("small", f.TYPE_INT32),
        ("f", f.TYPE_FLOAT),
        ("big", f.TYPE_UINT64),
    ]
    for number, (name, kind) in enumerate(scalars, 1):
        grown.field.add(name=name, number=number, type=kind, label=f.LABEL_OPTIONAL)
    grown.field.add(
        name="colour",
        number=6,
        type=f.TYPE_ENUM,
        type_name=".scratch.Colour",
        label=f.LABEL_OPTIONAL,
    )
    grown.field.add(name="counts", number=7, type=f.TYPE_INT64, label=f.LABEL_REPEATED)
    grown.field.add(
        name="values",
        number=8,
        type=f.TYPE_MESSAGE,
        label=f.LABEL_REPEATED,
        type_name=".google.protobuf.Value",
    )
    grown.field.add(
        name="labels",
        number=9,
        type=f.TYPE_MESSAGE,
        label=f.LABEL_REPEATED,
        type_name=".scratch.Grown.LabelsEntry",
    )
    messages = [
        ("created", ".google.protobuf.Timestamp"),
        ("items", ".google.protobuf.ListValue"),
        ("other", ".scratch.Other"),
    ]
    for number, (name, type_name) in enumerate(messages, 10):
        grown.field.add(
            name=name,
            number=number,
            type=f.TYPE_MESSAGE,
            label=f.LABEL_OPTIONAL,
            type_name=type_name,
        )
    return pool.Add(file).message_types_by_name["Grown"]


@pytest.mark.parametrize("name", list(_FIELD_TYPES))
def test_a_field_no_codec_carries_is_a_schema_error_naming_it(name: str) -> None:
    """What no codec has code for fails loudly, with the reason:
    a SchemaError (an ImportError, so import agui_wire.schema raises it) naming the
    message, the field, its type and number, also for a message of another
    package (created, items, other), before any codec is built from the schema."""
    fd = _grown().fields_by_name[name]
    with pytest.raises(SchemaError) as info:
        schema._field(fd)
    error = info.value
    assert isinstance(error, ImportError)
    assert isinstance(error, AguiWireError)
    assert error.where == f"Grown.{name}"
    assert str(error).startswith(f"agui_wire.schema: Grown.{name}: {_FIELD_TYPES[name]} = ")
    assert f" = {fd.number}: " in str(error)


def _ag_ui(type_name: str) -> FileDescriptor:
    """An ag_ui schema (a private pool) of `message Holder { <type_name> held = 3; }`
    beside `message Deep { message Outer { message Inner {} } }`, `message Event {}`
    and `message BaseEvent {}`."""
    pool = descriptor_pool.DescriptorPool()
    f = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(
        name="ag_ui/grown.proto", package="ag_ui", syntax="proto3"
    )
    file.message_type.add(name="Event")
    file.message_type.add(name="BaseEvent")
    file.message_type.add(name="Deep").nested_type.add(name="Outer").nested_type.add(name="Inner")
    file.message_type.add(name="Holder").field.add(
        name="held", number=3, type=f.TYPE_MESSAGE, label=f.LABEL_OPTIONAL, type_name=type_name
    )
    return pool.Add(file)


@pytest.mark.parametrize("type_name", ["ag_ui.Deep.Outer.Inner", "ag_ui.Event", "ag_ui.BaseEvent"])
def test_an_ag_ui_message_the_schema_leaves_out_is_a_schema_error_naming_it(
    type_name: str,
) -> None:
    """MESSAGES holds ag_ui's top-level messages (but Event and BaseEvent) and those
    nested one level: a field of any other ag_ui message is refused at import, naming
    it. It was a bare KeyError later, in the first codec built from the schema."""
    with pytest.raises(SchemaError) as info:
        schema._all_messages([_ag_ui(type_name)])
    assert info.value.where == "Holder.held"
    assert str(info.value).startswith(f"agui_wire.schema: Holder.held: {type_name} = 3: ")


def test_a_message_nested_one_level_is_carried() -> None:
    """As ToolCall.Function is, and a message nested in a new event would be."""
    specs = schema._all_messages([_ag_ui("ag_ui.Deep.Outer")])
    assert specs["Holder"].fields[0].message == "Deep_Outer"
    assert "Deep_Outer" in specs


def test_a_base_event_field_of_a_message_left_out_is_a_schema_error_naming_it() -> None:
    """Every event carries BaseEvent's fields: one of an ag_ui message the codecs do
    not carry is refused at import too, naming it."""
    file = _ag_ui("ag_ui.Deep.Outer.Inner")
    base = descriptor_pb2.DescriptorProto()
    file.message_types_by_name["Holder"].CopyToProto(base)
    base.name = "BaseEvent"
    proto = descriptor_pb2.FileDescriptorProto()
    file.CopyToProto(proto)
    proto.name = "ag_ui/base.proto"
    del proto.message_type[:]
    proto.message_type.add().CopyFrom(base)
    proto.message_type.add(name="Deep").nested_type.add(name="Outer").nested_type.add(name="Inner")
    desc = descriptor_pool.DescriptorPool().Add(proto).message_types_by_name["BaseEvent"]
    with pytest.raises(SchemaError) as info:
        schema._base_fields(desc, schema._all_messages([_ag_ui("ag_ui.Deep.Outer")]))
    assert info.value.where == "BaseEvent.held"
    assert "ag_ui.Deep.Outer.Inner = 3: no codec has code for this message" in str(info.value)
    assert (
        schema._base_fields(schema._descriptor("BaseEvent"), schema.MESSAGES) == schema.BASE_FIELDS
    )
