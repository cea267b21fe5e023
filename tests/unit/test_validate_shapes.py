"""agui_wire.validate's zod port is built from agui_wire.schema: one set of rules.

The encoders, the decoders and the validator read the same facts (which keys
exist, which are required, their JSON types and what each allows beyond its
type: ``schema.Field``); these tests hold the port's shapes to them, so a fact
changed or added in ``agui_wire.schema`` is a change of all three.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from agui_wire import _shapes as shapes
from agui_wire import schema
from agui_wire.validate import EVENT_SHAPES, validate_event

# Event keys a special rule carries instead of a 1:1 field (schema's module doc).
SPECIAL = {
    "TOOL_CALL_RESULT": {"content"},
    "RUN_FINISHED": {"outcome"},
    "SUBAGENT_FINISHED": {"outcome"},
}


def test_event_shapes_are_the_wire_fields() -> None:
    assert set(EVENT_SHAPES) == set(schema.EVENTS)
    for etype, shape in EVENT_SHAPES.items():
        fields = (*schema.BASE_FIELDS, *schema.EVENTS[etype].message.fields)
        want = {"type": True, **{f.name: f.required for f in fields}}
        got = {k: f.required for k, f in shape.fields.items() if k not in SPECIAL.get(etype, ())}
        assert got == want, etype


@pytest.mark.parametrize("name", sorted(set(schema.MESSAGES) - {"Message", "InputContent"}))
def test_nested_shapes_are_the_wire_fields(name: str) -> None:
    shape = shapes._nested(name)
    if isinstance(shape, shapes._Tagged):  # a union: each variant has the wire fields
        return
    assert {k: f.required for k, f in shape.fields.items()} == {
        f.name: f.required for f in schema.MESSAGES[name].fields
    }


def test_field_rules_become_zod_types() -> None:
    role = EVENT_SHAPES["TEXT_MESSAGE_START"].fields["role"].schema
    assert isinstance(role, shapes._Enum)
    assert role.values == schema.TEXT_MESSAGE_ROLES
    tool = EVENT_SHAPES["TOOL_CALL_RESULT"].fields["role"].schema
    assert isinstance(tool, shapes._Literal)
    assert tool.value == "tool"
    usage = shapes._nested("Usage")
    assert isinstance(usage, shapes._Loose)
    tokens = usage.fields["inputTokens"].schema
    assert isinstance(tokens, shapes._Int)
    assert tokens.lo == 0
    interrupt = shapes._nested("Interrupt")
    assert isinstance(interrupt, shapes._Loose)
    assert interrupt.fields["responseSchema"].schema is shapes.OBJECT
    patch = shapes._nested("JsonPatchOperation")
    assert isinstance(patch, shapes._Tagged)
    assert patch.options["move"].fields["from"].schema is shapes.POINTER


def test_a_rule_added_to_the_schema_reaches_the_port() -> None:
    start = schema.EVENTS["STEP_STARTED"]
    fields = tuple(
        replace(f, choices=("a", "b")) if f.name == "stepName" else f for f in start.message.fields
    )
    grown = replace(start, message=replace(start.message, fields=fields))
    shape = shapes._event(grown)
    assert isinstance(shape.fields["stepName"].schema, shapes._Enum)


def test_messages_follow_the_role_tables() -> None:
    message = shapes._nested("Message")
    assert isinstance(message, shapes._Tagged)
    for role, keys in schema.ROLE_KEYS.items():
        shape = message.options[role]
        assert list(shape.fields) == ["role", "subagentRunId", "id", *keys]
        assert {k for k, f in shape.fields.items() if f.required} == {
            "role",
            "id",
            *schema.ROLE_REQUIRED[role],
        }


@pytest.mark.parametrize(
    ("role", "content", "ok"),
    [
        ("user", [{"type": "text", "text": "hi"}], True),
        ("user", {"a": 1}, False),
        ("tool", [{"type": "text", "text": "hi"}], True),
        ("assistant", [{"type": "text", "text": "hi"}], False),
        ("activity", {"a": 1}, True),
        ("activity", "text", False),
        ("reasoning", "hmm", True),
    ],
)
def test_content_carriers_come_from_role_content(role: str, content: Any, ok: bool) -> None:
    message = {"id": "m", "role": role, "content": content}
    if role == "tool":
        message["toolCallId"] = "c"
    if role == "activity":
        message["activityType"] = "a"
    problems = validate_event({"type": "MESSAGES_SNAPSHOT", "messages": [message]})
    assert (not [p for p in problems if p.severity == "error"]) == ok, problems
