"""agui_wire.validate's zod port against agui_wire.schema: one set of keys and requiredness.

The port writes the one-to-one objects out in zod's key order with zod's JSON
types; which keys exist and which are required are wire facts, and
``agui_wire.schema`` (held to ``@ag-ui/core`` by tests/interop/test_schema.py) is
their home. ``disagreements`` compares the two object by object; the last tests
feed it mutated copies to prove it can fail.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

import pytest

from agui_wire import schema
from agui_wire.validate import EVENT_SHAPES, validate_event
from agui_wire.validate import _shapes as shapes

# Port object name -> schema spec name, for the objects a wire message maps 1:1.
NESTED = {
    "RunAgentInput": "RunAgentInput",
    "Tool": "Tool",
    "Context": "Context",
    "ResumeEntry": "ResumeEntry",
    "Interrupt": "Interrupt",
    "TokenUsage": "Usage",
    "ToolCall": "ToolCall",
    "FunctionCall": "ToolCall_Function",
    **{f"{tag.capitalize()}Part": m for tag, (_, m) in schema.PART_ARMS.items()},
    **{f"{tag.capitalize()}Source": m for tag, (_, m) in schema.SOURCE_ARMS.items()},
}
# Event keys a special rule carries instead of a 1:1 field (schema's module doc).
SPECIAL = {
    "TOOL_CALL_RESULT": {"content"},
    "RUN_FINISHED": {"outcome"},
    "SUBAGENT_FINISHED": {"outcome"},
}


def objects(node: Any, seen: set[int] | None = None) -> Iterator[Any]:
    """Every loose object schema reachable from ``node``."""
    seen = set() if seen is None else seen
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, shapes._Loose):
        yield node
        for f in node.fields.values():
            yield from objects(f.schema, seen)
    elif isinstance(node, shapes._Tagged):
        for option in node.options.values():
            yield from objects(option, seen)
    elif isinstance(node, shapes._Union):
        for branch in node.branches:
            yield from objects(branch, seen)
    elif isinstance(node, shapes._Array):
        yield from objects(node.item, seen)


def required(obj: Any) -> dict[str, bool]:
    return {k: f.required for k, f in obj.fields.items()}


def disagreements(
    events: Mapping[str, Any],
    messages: Mapping[str, schema.MessageSpec],
    specs: Mapping[str, schema.EventSpec],
) -> list[str]:
    problems = []
    if set(events) != set(specs):
        problems.append(f"event types: {sorted(set(events) ^ set(specs))}")
    base = {f.name: f.required for f in schema.BASE_FIELDS}
    for etype, shape in events.items():
        if etype not in specs:
            continue
        wire = {f.name: f.required for f in specs[etype].message.fields}
        ours = required(shape)
        ours.pop("type")
        for key in SPECIAL.get(etype, ()):
            ours.pop(key, None)
        if ours != {**base, **wire}:
            problems.append(f"{etype}: {ours} != { ({**base, **wire}) }")
    found = {o.name: o for e in events.values() for o in objects(e)}
    for name, spec_name in NESTED.items():
        if name not in found:
            problems.append(f"{name}: not in the port")
            continue
        ours = required(found[name])
        ours.pop("type", None)  # a part's or source's discriminator, ToolCall's literal
        wire = {f.name: f.required for f in messages[spec_name].fields}
        if spec_name == "ToolCall":
            wire.pop("type")
        if ours != wire:
            problems.append(f"{name}: {ours} != {wire}")
    return problems


def test_port_agrees_with_schema() -> None:
    assert disagreements(EVENT_SHAPES, schema.MESSAGES, schema.EVENTS) == []


def test_messages_follow_the_role_tables() -> None:
    for role, keys in schema.ROLE_KEYS.items():
        shape = shapes._MESSAGE.options[role]
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


def test_checker_catches_a_key_made_optional() -> None:
    start = schema.EVENTS["TOOL_CALL_START"]
    fields = tuple(
        replace(f, required=False) if f.name == "toolCallName" else f for f in start.message.fields
    )
    changed = replace(start, message=replace(start.message, fields=fields))
    specs = {**schema.EVENTS, "TOOL_CALL_START": changed}
    (problem,) = disagreements(EVENT_SHAPES, schema.MESSAGES, specs)
    assert problem.startswith("TOOL_CALL_START:")


def test_checker_catches_a_new_field_and_a_new_event() -> None:
    interrupt = schema.MESSAGES["Interrupt"]
    grown = replace(
        interrupt,
        fields=(*interrupt.fields, schema.Field("traceId", 99, schema.Kind.STRING)),
    )
    messages = {**schema.MESSAGES, "Interrupt": grown}
    specs = {**schema.EVENTS, "NEW_EVENT": schema.EVENTS["RAW"]}
    new_event, interrupt_problem = disagreements(EVENT_SHAPES, messages, specs)
    assert new_event == "event types: ['NEW_EVENT']"
    assert interrupt_problem.startswith("Interrupt: ")
    assert "'traceId': False" in interrupt_problem
