"""EncodeError: every refusal names the event type, the JSON pointer and the reason.

Runs against both codec implementations (``codec`` fixture in conftest.py).
"""

from __future__ import annotations

import math
import sys
from typing import Any

import pytest

from agui_wire import EncodeError

TMC = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "d"}


def ev(**fields: Any) -> dict[str, Any]:
    return {**TMC, **fields}


def msgs(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"type": "MESSAGES_SNAPSHOT", "messages": list(messages)}


# (event, expected event_type, expected path, a fragment of the reason)
CASES: list[tuple[Any, str | None, str, str]] = [
    ([1, 2], None, "", "must be a JSON object"),
    ({"messageId": "m"}, None, "/type", "required field is missing"),
    ({"type": 5}, None, "/type", "expected a string"),
    ({"type": "FOO_BAR"}, None, "/type", "unknown event type 'FOO_BAR'"),
    (
        {"type": "text_message_content", "messageId": "m", "delta": ""},
        None,
        "/type",
        "unknown event type",
    ),
    (
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m"},
        "TEXT_MESSAGE_CONTENT",
        "/delta",
        "required field is missing",
    ),
    (ev(delta=None), "TEXT_MESSAGE_CONTENT", "/delta", "required, got null"),
    (ev(messageId=42), "TEXT_MESSAGE_CONTENT", "/messageId", "expected a string, got number"),
    (ev(delta="a\ud800b"), "TEXT_MESSAGE_CONTENT", "/delta", "lone surrogate"),
    (
        ev(timestamp="1700000000000"),
        "TEXT_MESSAGE_CONTENT",
        "/timestamp",
        "expected an integer, got string",
    ),
    (ev(timestamp=True), "TEXT_MESSAGE_CONTENT", "/timestamp", "expected an integer, got boolean"),
    (ev(timestamp=1.5), "TEXT_MESSAGE_CONTENT", "/timestamp", "expected an integer"),
    (ev(timestamp=2**60), "TEXT_MESSAGE_CONTENT", "/timestamp", "outside the safe range"),
    (ev(metadata=[1]), "TEXT_MESSAGE_CONTENT", "/metadata", "expected an object, got array"),
    (ev(metadata="x"), "TEXT_MESSAGE_CONTENT", "/metadata", "expected an object, got string"),
    (ev(metadata={1: "a"}), "TEXT_MESSAGE_CONTENT", "/metadata", "key 1 is not a string"),
    (
        ev(metadata={"a": {"b/c": [0, float("nan")]}}),
        "TEXT_MESSAGE_CONTENT",
        "/metadata/a/b~1c/1",
        "nan is not a JSON number",
    ),
    (
        ev(rawEvent={"x": math.inf}),
        "TEXT_MESSAGE_CONTENT",
        "/rawEvent/x",
        "inf is not a JSON number",
    ),
    (
        ev(rawEvent={"big": 2**53 + 1}),
        "TEXT_MESSAGE_CONTENT",
        "/rawEvent/big",
        "does not fit a double exactly",
    ),
    (ev(rawEvent={"k\udc00": 1}), "TEXT_MESSAGE_CONTENT", "/rawEvent/k\udc00", "lone surrogate"),
    (
        ev(rawEvent={"set": {1, 2}}),
        "TEXT_MESSAGE_CONTENT",
        "/rawEvent/set",
        "set is not a JSON value",
    ),
    ({"type": "STATE_SNAPSHOT"}, "STATE_SNAPSHOT", "/snapshot", "required field is missing"),
    (
        {"type": "STATE_DELTA", "delta": {}},
        "STATE_DELTA",
        "/delta",
        "expected an array, got object",
    ),
    (
        {"type": "STATE_DELTA", "delta": [{"op": "ADD", "path": "/a", "value": 1}]},
        "STATE_DELTA",
        "/delta/0/op",
        "unknown patch op 'ADD'",
    ),
    (
        {"type": "STATE_DELTA", "delta": [{"path": "/a"}]},
        "STATE_DELTA",
        "/delta/0/op",
        "required field is missing",
    ),
    (
        {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a"}]},
        "STATE_DELTA",
        "/delta/0/value",
        "required field is missing",
    ),
    (
        {"type": "STATE_DELTA", "delta": [{"op": "move", "path": "/a"}]},
        "STATE_DELTA",
        "/delta/0/from",
        "required field is missing",
    ),
    (
        {
            "type": "ACTIVITY_DELTA",
            "messageId": "m",
            "activityType": "t",
            "patch": [{"op": "copy", "path": "/a", "from": 3}],
        },
        "ACTIVITY_DELTA",
        "/patch/0/from",
        "expected a string",
    ),
    (
        msgs({"id": "1", "role": "user"}),
        "MESSAGES_SNAPSHOT",
        "/messages/0/content",
        "required field is missing",
    ),
    (
        msgs({"id": "1", "role": "tool", "content": "x"}),
        "MESSAGES_SNAPSHOT",
        "/messages/0/toolCallId",
        "required field is missing",
    ),
    (
        msgs({"id": "1", "role": "assistant", "content": [{"type": "text", "text": "t"}]}),
        "MESSAGES_SNAPSHOT",
        "/messages/0/content",
        "content of a 'assistant' message must be a string",
    ),
    (
        msgs({"id": "1", "role": "activity", "activityType": "a", "content": "s"}),
        "MESSAGES_SNAPSHOT",
        "/messages/0/content",
        "must be an object",
    ),
    (
        msgs({"id": "1", "role": "user", "content": [{"type": "binary", "data": "x"}]}),
        "MESSAGES_SNAPSHOT",
        "/messages/0/content/0/type",
        "unknown content part type 'binary'",
    ),
    (
        msgs(
            {
                "id": "1",
                "role": "user",
                "content": [{"type": "image", "source": {"type": "blob", "value": "v"}}],
            }
        ),
        "MESSAGES_SNAPSHOT",
        "/messages/0/content/0/source/type",
        "unknown source type 'blob'",
    ),
    (
        msgs({"id": "1", "role": "user", "content": [{"type": "image"}]}),
        "MESSAGES_SNAPSHOT",
        "/messages/0/content/0/source",
        "required field is missing",
    ),
    (
        msgs(
            {
                "id": "1",
                "role": "user",
                "content": [{"type": "image", "source": {"type": "data", "value": "v"}}],
            }
        ),
        "MESSAGES_SNAPSHOT",
        "/messages/0/content/0/source/mimeType",
        "required field is missing",
    ),
    (
        msgs(
            {
                "id": "1",
                "role": "assistant",
                "toolCalls": [{"id": "c", "type": "function", "function": {"name": "f"}}],
            }
        ),
        "MESSAGES_SNAPSHOT",
        "/messages/0/toolCalls/0/function/arguments",
        "required field is missing",
    ),
    (
        msgs(
            {
                "id": "1",
                "role": "assistant",
                "toolCalls": [
                    {
                        "id": "c",
                        "type": "function",
                        "function": {"name": "f", "arguments": {"a": 1}},
                    }
                ],
            }
        ),
        "MESSAGES_SNAPSHOT",
        "/messages/0/toolCalls/0/function/arguments",
        "expected a string, got object",
    ),
    (
        {"type": "TOOL_CALL_RESULT", "messageId": "m", "toolCallId": "c"},
        "TOOL_CALL_RESULT",
        "/content",
        "required field is missing",
    ),
    (
        {"type": "TOOL_CALL_RESULT", "messageId": "m", "toolCallId": "c", "content": {"a": 1}},
        "TOOL_CALL_RESULT",
        "/content",
        "expected a string or an array",
    ),
    (
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": "success"},
        "RUN_FINISHED",
        "/outcome",
        "expected an object, got string",
    ),
    (
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {}},
        "RUN_FINISHED",
        "/outcome/type",
        "expected a non-empty string",
    ),
    (
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "interrupt"}},
        "RUN_FINISHED",
        "/outcome/interrupts",
        "required field is missing",
    ),
    (
        {
            "type": "RUN_FINISHED",
            "threadId": "t",
            "runId": "r",
            "outcome": {"type": "interrupt", "interrupts": [{"id": "i"}]},
        },
        "RUN_FINISHED",
        "/outcome/interrupts/0/reason",
        "required field is missing",
    ),
    (
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "usage": [{"inputTokens": 1.5}]},
        "RUN_FINISHED",
        "/usage/0/inputTokens",
        "expected an integer",
    ),
    (
        {
            "type": "SUBAGENT_FINISHED",
            "subagentRunId": "s",
            "outcome": {"type": "suspended", "interruptIds": "x"},
        },
        "SUBAGENT_FINISHED",
        "/outcome/interruptIds",
        "expected an array",
    ),
    (
        {
            "type": "RUN_STARTED",
            "threadId": "t",
            "runId": "r",
            "input": {"threadId": "t", "runId": "r"},
        },
        "RUN_STARTED",
        "/input/messages",
        "required field is missing",
    ),
    (
        {
            "type": "RUN_STARTED",
            "threadId": "t",
            "runId": "r",
            "input": {"threadId": "t", "runId": "r", "messages": [], "tools": [{"name": "x"}]},
        },
        "RUN_STARTED",
        "/input/tools/0/description",
        "required field is missing",
    ),
    (
        {"type": "ACTIVITY_SNAPSHOT", "messageId": "m", "activityType": "t", "content": [1, 2]},
        "ACTIVITY_SNAPSHOT",
        "/content",
        "expected an object, got array",
    ),
    (
        {
            "type": "ACTIVITY_SNAPSHOT",
            "messageId": "m",
            "activityType": "t",
            "content": {},
            "replace": "yes",
        },
        "ACTIVITY_SNAPSHOT",
        "/replace",
        "expected a boolean",
    ),
]


@pytest.mark.parametrize(("event", "etype", "path", "reason"), CASES)
def test_refusal_names_type_path_and_reason(
    codec, event: Any, etype: str | None, path: str, reason: str
) -> None:
    with pytest.raises(EncodeError) as info:
        codec.encode_payload(event)
    err = info.value
    assert (err.event_type, err.path) == (etype, path)
    assert reason in err.reason
    assert reason in str(err)


def test_lossy_numbers_rounds_big_integers(codec) -> None:
    event = ev(rawEvent={"big": 2**53 + 1})
    payload = codec.encode_payload(event, lossy_numbers=True)
    assert codec.decode_payload(payload)["rawEvent"] == {"big": float(2**53)}
    # past the largest double: ±Infinity, as JSON.parse reads it and @ag-ui/proto
    # writes it; just below the rounding boundary, the largest double
    huge = {"up": 10**400, "down": -(10**400), "edge": 2**1024 - 2**970, "max": 2**1024 - 2**971}
    payload = codec.encode_payload(ev(rawEvent=huge), lossy_numbers=True)
    assert codec.decode_payload(payload)["rawEvent"] == {
        "up": math.inf,
        "down": -math.inf,
        "edge": math.inf,
        "max": sys.float_info.max,
    }
    with pytest.raises(EncodeError, match="does not fit a double exactly"):
        codec.encode_payload(ev(rawEvent=10**400))


def test_integers_up_to_2_53_are_exact(codec) -> None:
    for n in (2**53, -(2**53), 2**53 - 1, 0, -1):
        assert codec.decode_payload(codec.encode_payload(ev(rawEvent=n)))["rawEvent"] == n


def test_extra_keys_dropped_by_default_refused_on_request(codec) -> None:
    event = msgs(
        {"id": "1", "role": "user", "content": [{"type": "text", "text": "t", "x": 1}], "y": 2}
    )
    event["z"] = 3
    decoded = codec.decode_payload(codec.encode_payload(event))
    assert decoded == msgs({"id": "1", "role": "user", "content": [{"type": "text", "text": "t"}]})
    with pytest.raises(EncodeError) as info:
        codec.encode_payload(event, extra_keys="error")
    assert info.value.path == "/messages/0/content/0"
    assert "'x'" in info.value.reason
    outcome = {
        "type": "RUN_FINISHED",
        "threadId": "t",
        "runId": "r",
        "outcome": {"type": "success", "interrupts": []},
    }
    with pytest.raises(EncodeError) as info:
        codec.encode_payload(outcome, extra_keys="error")
    assert info.value.path == "/outcome"


def test_nesting_limit(codec) -> None:
    value: Any = 0
    for _ in range(20):
        value = [value]
    codec.encode_payload({"type": "CUSTOM", "name": "n", "value": value}, max_depth=20)
    with pytest.raises(EncodeError, match="max_depth=19"):
        codec.encode_payload({"type": "CUSTOM", "name": "n", "value": value}, max_depth=19)
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    # a cycle is met as a container seen again, not by running into max_depth
    with pytest.raises(EncodeError, match="a cycle: this is the container at /value again"):
        codec.encode_payload({"type": "CUSTOM", "name": "n", "value": cyclic})


def test_options_are_checked(codec) -> None:
    with pytest.raises(ValueError, match="extra_keys"):
        codec.encode_payload(TMC, extra_keys="keep")
    with pytest.raises(ValueError, match="max_depth"):
        codec.encode_payload(TMC, max_depth=0)


def test_null_means_absent_for_optional_fields(codec) -> None:
    event = ev(timestamp=None, rawEvent=None, metadata=None, subagentRunId=None)
    assert codec.encode_payload(event) == codec.encode_payload(TMC)
    snapshot = codec.decode_payload(
        codec.encode_payload({"type": "STATE_SNAPSHOT", "snapshot": None})
    )
    assert snapshot == {"type": "STATE_SNAPSHOT", "snapshot": None}


def test_str_and_int_subclasses_are_accepted(codec) -> None:
    import enum

    class Kind(str, enum.Enum):
        TMC = "TEXT_MESSAGE_CONTENT"

    class Level(enum.IntEnum):
        HIGH = 3

    event = {"type": Kind.TMC, "messageId": "m", "delta": "d", "rawEvent": {"level": Level.HIGH}}
    decoded = codec.decode_payload(codec.encode_payload(event))
    assert decoded == {**TMC, "rawEvent": {"level": 3}}


def test_option_types_are_checked(codec) -> None:
    for bad in (True, 5.0, "5"):
        with pytest.raises(ValueError, match="max_depth"):
            codec.encode_payload(TMC, max_depth=bad)
        with pytest.raises(ValueError, match="max_depth"):
            codec.decode_payload(b"", max_depth=bad)
    with pytest.raises(ValueError, match="lossy_numbers"):
        codec.encode_payload(TMC, lossy_numbers=1)
    for not_bytes in (7, "abc", None, [1]):
        with pytest.raises(TypeError, match="expected bytes"):
            codec.decode_payload(not_bytes)
