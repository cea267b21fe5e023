"""What the evolution drill adds to the schema, and the events that exercise it.

Each ``Edit`` is a change a maintainer makes to ``proto/ag_ui/*.proto`` when AG-UI
grows (field numbers are the next free ones, found in the text, never typed here);
each ``Thing`` is an event that uses one edit, with a check on the wire bytes
(read back by protobuf's own parser, not by our codecs) that the new data is
there. The drill applies edits to a scratch copy of the tree only.

Stdlib only: ``_probe.py`` imports this module from its own folder, in a
subprocess whose ``sys.path`` holds the scratch tree instead of the real one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# -- editing .proto text ----------------------------------------------------------


def _block(text: str, kind: str, name: str) -> re.Match[str]:
    """The top-level ``message``/``enum`` block ``name`` (its body up to the ``}``
    in column 0: nested blocks are indented)."""
    m = re.search(rf"^{kind} {name} \{{\n(?P<body>.*?)^\}}\n", text, re.MULTILINE | re.DOTALL)
    if m is None:
        raise ValueError(f"no {kind} {name} in the schema")
    return m


def _next_number(body: str) -> int:
    return max(int(n) for n in re.findall(r"=\s*(\d+)\s*;", body)) + 1


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(p.capitalize() for p in rest)


def add_field(text: str, message: str, decl: str, number: int | None = None) -> str:
    """``decl`` (``optional string trace_id``) added to ``message`` with the next
    free field number (or ``number``), commented with its JSON name as the
    schema's other fields are."""
    m = _block(text, "message", message)
    n = _next_number(m["body"]) if number is None else number
    line = f"  {decl} = {n};  // JSON/ts: {_camel(decl.split()[-1])}\n"
    return text[: m.end("body")] + line + text[m.end("body") :]


def add_oneof_arm(text: str, message: str, oneof: str, decl: str) -> str:
    """``decl`` (``StickerInputPart sticker``) as the next arm of ``message``'s oneof."""
    m = _block(text, "message", message)
    arms = re.search(rf"  oneof {oneof} \{{\n(?P<arms>.*?)^  \}}\n", m["body"], re.M | re.S)
    if arms is None:
        raise ValueError(f"no oneof {oneof} in message {message}")
    at = m.start("body") + arms.end("arms")
    line = f"    {decl} = {_next_number(arms['arms'])};  // JSON/ts: {_camel(decl.split()[-1])}\n"
    return text[:at] + line + text[at:]


def add_event_type(text: str, type_name: str, message: str, arm: str) -> str:
    """A new event type: the ``EventType`` value (next free), and the arm of the
    ``Event`` oneof (next free) carrying ``message``."""
    enum = _block(text, "enum", "EventType")
    line = f"  {type_name} = {_next_number(enum['body'])};\n"
    text = text[: enum.end("body")] + line + text[enum.end("body") :]
    return add_oneof_arm(text, "Event", "event", f"{message} {arm}")


def add_import(text: str, path: str) -> str:
    """``import "path";`` after the schema's last import line."""
    last = list(re.finditer(r'^import "[^"]+";\n', text, re.MULTILINE))[-1]
    return text[: last.end()] + f'import "{path}";\n' + text[last.end() :]


def append(text: str, block: str) -> str:
    return text.rstrip("\n") + "\n\n" + block.strip("\n") + "\n"


# -- the edits ------------------------------------------------------------------------


@dataclass(frozen=True)
class Edit:
    key: str  # the letter
    what: str
    apply: Callable[[dict[str, str]], None]  # edits {file name: text} in place


def _event_field(s: dict[str, str]) -> None:
    s["events.proto"] = add_field(
        s["events.proto"], "TextMessageContentEvent", "optional string trace_id"
    )


def _message_field(s: dict[str, str]) -> None:
    s["types.proto"] = add_field(s["types.proto"], "Message", "optional string trace_id")


def _run_input_field(s: dict[str, str]) -> None:
    s["types.proto"] = add_field(s["types.proto"], "RunAgentInput", "optional string trace_id")


def _repeated_message_field(s: dict[str, str]) -> None:
    text = add_field(s["events.proto"], "ToolCallStartEvent", "repeated Tag tags")
    text = add_field(text, "ToolCallStartEvent", "optional Tag primary_tag")
    s["events.proto"] = append(
        text,
        """
message Tag {
  string key = 1;  // JSON/ts: key
  string value = 2;  // JSON/ts: value
}
""",
    )


def _new_event(s: dict[str, str]) -> None:
    text = add_event_type(s["events.proto"], "TRACE_SPAN", "TraceSpanEvent", "trace_span")
    s["events.proto"] = append(
        text,
        """
message TraceSpanEvent {
  BaseEvent base_event = 1;  // JSON/ts: baseEvent
  string span_id = 2;  // JSON/ts: spanId
  optional string parent_span_id = 3;  // JSON/ts: parentSpanId
  optional google.protobuf.Value attributes = 4;  // JSON/ts: attributes
  optional string subagent_run_id = 5;  // JSON/ts: subagentRunId
}
""",
    )


def _part_fields(s: dict[str, str]) -> None:
    text = add_field(s["types.proto"], "TextInputPart", "optional string lang")
    s["types.proto"] = add_field(text, "InputContentUrlSource", "optional string etag")


def _tool_call_field(s: dict[str, str]) -> None:
    s["types.proto"] = add_field(s["types.proto"], "ToolCall", "optional string trace_id")


def _base_field(s: dict[str, str]) -> None:
    s["events.proto"] = add_field(s["events.proto"], "BaseEvent", "optional string span_ref")


def _new_part_type(s: dict[str, str]) -> None:
    text = add_oneof_arm(s["types.proto"], "InputContent", "part", "StickerInputPart sticker")
    s["types.proto"] = append(
        text,
        """
message StickerInputPart {
  string sticker_id = 1;  // JSON/ts: stickerId
  optional string id = 2;  // JSON/ts: id
}
""",
    )


def _outcome_fields(s: dict[str, str]) -> None:
    s["types.proto"] = add_field(s["types.proto"], "Interrupt", "optional string trace_id")
    s["events.proto"] = add_field(s["events.proto"], "Usage", "optional int64 audio_tokens")


def _new_source_type(s: dict[str, str]) -> None:
    text = add_oneof_arm(
        s["types.proto"], "InputContentSource", "source", "InputContentBlobSource blob"
    )
    s["types.proto"] = append(
        text,
        """
message InputContentBlobSource {
  string blob_id = 1;  // JSON/ts: blobId
  optional string mime_type = 2;  // JSON/ts: mimeType
}
""",
    )


def _patch_field(s: dict[str, str]) -> None:
    s["patch.proto"] = add_field(s["patch.proto"], "JsonPatchOperation", "optional string trace_id")


# A field the C tables cannot hold (the loud-failure case): a field number far
# beyond any event's (AG-UI's highest is 14), which a fixed-size table indexed by
# field number cannot take; the pure codecs can.
FAR_NUMBER = 99


def _far_field(s: dict[str, str]) -> None:
    s["events.proto"] = add_field(
        s["events.proto"], "TextMessageEndEvent", "optional string far_away", FAR_NUMBER
    )


# Shapes no codec has code for (schema.py refuses them at import with a SchemaError
# naming the field and its type): repeated scalars other than strings (packed on the
# wire), repeated JSON values, maps, the scalar types other than string, int64 and
# bool (a new one needs code in every codec: upb, the pure twins, the C tables), and
# a message of another package than ag_ui (Value and Struct aside).
UNMAPPED = {
    "repeated-int64": "repeated int64 counts",
    "repeated-value": "repeated google.protobuf.Value values",
    "map": "map<string, string> labels",
    "double": "optional double ratio",
    "bytes": "optional bytes blob",
    "foreign": "optional google.protobuf.Timestamp created",
}
# the import line an UNMAPPED shape needs in events.proto
_UNMAPPED_IMPORTS = {"foreign": "google/protobuf/timestamp.proto"}


def _unmapped(key: str) -> Callable[[dict[str, str]], None]:
    def apply(s: dict[str, str]) -> None:
        text = s["events.proto"]
        if key in _UNMAPPED_IMPORTS:
            text = add_import(text, _UNMAPPED_IMPORTS[key])
        s["events.proto"] = add_field(text, "StepStartedEvent", UNMAPPED[key])

    return apply


EDITS: dict[str, Edit] = {
    e.key: e
    for e in (
        Edit("a", "optional string trace_id on TextMessageContentEvent", _event_field),
        Edit("b", "optional string trace_id on Message", _message_field),
        Edit("c", "optional string trace_id on RunAgentInput", _run_input_field),
        Edit(
            "d", "repeated Tag tags, optional Tag primary_tag (Tag: new)", _repeated_message_field
        ),
        Edit(
            "e", "a new event type TRACE_SPAN (enum value, TraceSpanEvent, oneof arm)", _new_event
        ),
        Edit("f", "optional fields on TextInputPart and InputContentUrlSource", _part_fields),
        Edit("g", "optional string trace_id on ToolCall", _tool_call_field),
        Edit("h", "optional string span_ref on BaseEvent (every event)", _base_field),
        Edit("i", "a new content part type StickerInputPart (InputContent arm)", _new_part_type),
        Edit("j", "fields on Interrupt and Usage (outcome payload, usage)", _outcome_fields),
        Edit("k", "a new part source type InputContentBlobSource", _new_source_type),
        Edit("l", "optional string trace_id on JsonPatchOperation", _patch_field),
        Edit("far", f"optional string far_away = {FAR_NUMBER} on TextMessageEndEvent", _far_field),
        *(
            Edit(key, f"{decl} on StepStartedEvent", _unmapped(key))
            for key, decl in UNMAPPED.items()
        ),
    )
}

SCHEMAS = ("events.proto", "types.proto", "patch.proto")


def evolve(proto_dir: Path, keys: Sequence[str]) -> None:
    """Apply the edits ``keys`` to the ``.proto`` files in ``proto_dir``."""
    files = {name: (proto_dir / name).read_text() for name in SCHEMAS}
    for key in keys:
        EDITS[key].apply(files)
    for name, text in files.items():
        (proto_dir / name).write_text(text)


# -- the events that use them -------------------------------------------------------


@dataclass(frozen=True)
class Thing:
    name: str
    edit: str  # the Edit it needs
    event: dict[str, Any]  # as @ag-ui/core JSON, already in the decoders' shape
    wire: Callable[[Any], Any]  # ag_ui.Event message -> the new data on the wire
    expected: Any  # what ``wire`` must return


_ROLES: list[dict[str, Any]] = [
    {"id": "u1", "role": "user", "content": "hi"},
    {
        "id": "u2",
        "role": "user",
        "content": [
            {"type": "text", "text": "see"},
            {"type": "image", "source": {"type": "url", "value": "https://x/y.png"}},
        ],
    },
    {
        "id": "a1",
        "role": "assistant",
        "content": "calling",
        "toolCalls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    },
    {"id": "t1", "role": "tool", "content": "42", "toolCallId": "c1"},
    {"id": "s1", "role": "system", "content": "be brief"},
    {"id": "d1", "role": "developer", "content": "dev"},
    {"id": "r1", "role": "reasoning", "content": "thinking"},
    {"id": "v1", "role": "activity", "activityType": "plan", "content": {"steps": [1, 2]}},
]


def _messages(tag: str) -> list[dict[str, Any]]:
    return [{**m, "traceId": f"{tag}-{m['id']}"} for m in _ROLES]


def _run_input(**more: Any) -> dict[str, Any]:
    # tools, context and resume as the decoders give them back (empty arrays)
    base = {"threadId": "th", "runId": "r", "state": {"n": 1}, "messages": []}
    return {**base, "tools": [], "context": [], "resume": [], **more}


THINGS: dict[str, Thing] = {
    t.name: t
    for t in (
        Thing(
            "event_field",
            "a",
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Hi", "traceId": "t-1"},
            lambda e: e.text_message_content.trace_id,
            "t-1",
        ),
        Thing(
            "message_field_in_snapshot",
            "b",
            {"type": "MESSAGES_SNAPSHOT", "messages": _messages("snap")},
            lambda e: [m.trace_id for m in e.messages_snapshot.messages],
            [f"snap-{m['id']}" for m in _ROLES],
        ),
        Thing(
            "message_field_in_run_input",
            "b",
            {
                "type": "RUN_STARTED",
                "threadId": "th",
                "runId": "r",
                "input": _run_input(messages=_messages("in")),
            },
            lambda e: [m.trace_id for m in e.run_started.input.messages],
            [f"in-{m['id']}" for m in _ROLES],
        ),
        Thing(
            "run_input_field",
            "c",
            {
                "type": "RUN_STARTED",
                "threadId": "th",
                "runId": "r",
                "input": _run_input(traceId="t-in"),
            },
            lambda e: e.run_started.input.trace_id,
            "t-in",
        ),
        Thing(
            "repeated_message_field",
            "d",
            {
                "type": "TOOL_CALL_START",
                "toolCallId": "c1",
                "toolCallName": "search",
                "tags": [{"key": "k1", "value": "v1"}, {"key": "k2", "value": ""}],
                "primaryTag": {"key": "p", "value": "q"},
            },
            lambda e: (
                [(t.key, t.value) for t in e.tool_call_start.tags],
                (e.tool_call_start.primary_tag.key, e.tool_call_start.primary_tag.value),
            ),
            ([("k1", "v1"), ("k2", "")], ("p", "q")),
        ),
        Thing(
            "new_event",
            "e",
            {
                "type": "TRACE_SPAN",
                "spanId": "s1",
                "parentSpanId": "s0",
                "attributes": {"k": [1, "x", None, True, 2.5]},
                "timestamp": 1700000000000,
            },
            lambda e: (
                e.WhichOneof("event"),
                e.trace_span.span_id,
                e.trace_span.parent_span_id,
                e.trace_span.base_event.timestamp,
            ),
            ("trace_span", "s1", "s0", 1700000000000),
        ),
    )
}

THINGS.update(
    (t.name, t)
    for t in (
        Thing(
            "part_fields",
            "f",
            {
                "type": "TOOL_CALL_RESULT",
                "messageId": "m1",
                "toolCallId": "c1",
                "content": [
                    {"type": "text", "text": "see", "lang": "en"},
                    {"type": "image", "source": {"type": "url", "value": "u", "etag": "e1"}},
                ],
            },
            lambda e: (
                e.tool_call_result.content_parts[0].text.lang,
                e.tool_call_result.content_parts[1].image.source.url.etag,
            ),
            ("en", "e1"),
        ),
        Thing(
            "tool_call_field",
            "g",
            {
                "type": "MESSAGES_SNAPSHOT",
                "messages": [
                    {
                        "id": "a1",
                        "role": "assistant",
                        "toolCalls": [
                            {
                                "id": "c1",
                                "type": "function",
                                "function": {"name": "f", "arguments": "{}"},
                                "traceId": "t-call",
                            }
                        ],
                    }
                ],
            },
            lambda e: e.messages_snapshot.messages[0].tool_calls[0].trace_id,
            "t-call",
        ),
        Thing(
            "base_field",
            "h",
            {"type": "STEP_STARTED", "stepName": "plan", "spanRef": "sp-1", "timestamp": 5},
            lambda e: e.step_started.base_event.span_ref,
            "sp-1",
        ),
        Thing(
            "new_part_type",
            "i",
            {
                "type": "MESSAGES_SNAPSHOT",
                "messages": [
                    {
                        "id": "u1",
                        "role": "user",
                        "content": [{"type": "sticker", "stickerId": "st"}],
                    }
                ],
            },
            lambda e: e.messages_snapshot.messages[0].content_parts[0].sticker.sticker_id,
            "st",
        ),
        Thing(
            "outcome_fields",
            "j",
            {
                "type": "RUN_FINISHED",
                "threadId": "th",
                "runId": "r",
                "outcome": {
                    "type": "interrupt",
                    "interrupts": [{"id": "i1", "reason": "approval", "traceId": "t-int"}],
                },
                "usage": [{"model": "m", "audioTokens": 7}],
            },
            lambda e: (
                e.run_finished.interrupts[0].trace_id,
                e.run_finished.usage[0].audio_tokens,
            ),
            ("t-int", 7),
        ),
        Thing(
            "new_source_type",
            "k",
            {
                "type": "MESSAGES_SNAPSHOT",
                "messages": [
                    {
                        "id": "u1",
                        "role": "user",
                        "content": [
                            {"type": "image", "source": {"type": "blob", "blobId": "b1"}},
                            {
                                "type": "image",
                                "source": {"type": "blob", "blobId": "b2", "mimeType": "image/png"},
                            },
                        ],
                    }
                ],
            },
            lambda e: [
                p.image.source.blob.blob_id for p in e.messages_snapshot.messages[0].content_parts
            ],
            ["b1", "b2"],
        ),
        Thing(
            "patch_field",
            "l",
            {
                "type": "STATE_DELTA",
                "delta": [
                    {"op": "add", "path": "/a", "value": 1, "traceId": "t-op"},
                    {"op": "remove", "path": "/b", "traceId": "t-op2"},
                ],
            },
            lambda e: [op.trace_id for op in e.state_delta.delta],
            ["t-op", "t-op2"],
        ),
    )
)

# The far field: the event the pure codecs must still carry when the C tables
# cannot (the loud-failure case).
FAR_EVENT: dict[str, Any] = {"type": "TEXT_MESSAGE_END", "messageId": "m1", "farAway": "far"}
