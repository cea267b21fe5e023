"""One contract: what @ag-ui/core's zod schemas reject, every encoder refuses.

``validation_cases.BROKEN_EVENTS`` are events the reference client's schemas
reject (tests/interop/test_cli_validate.py proves it against ``@ag-ui/core``);
``VALID_ODDITIES`` ones they accept though they look wrong. An encoder refuses
the first with an ``EncodeError`` naming the same place ``validate_event`` names,
and writes the second. A case that holds ``None`` is left out: to an encoder
``None`` means "absent" (the reference's ``omitOptionalNulls``), while the JSON
``null`` the validator judges is a value.

Runs against both codec implementations (``codec``) and both transports.
"""

from __future__ import annotations

from typing import Any

import pytest

from agui_wire import EncodeError
from agui_wire.validate import validate_event
from tests.support.validation_cases import BROKEN_EVENTS, VALID_ODDITIES


def _holds_none(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, dict):
        return any(_holds_none(v) for v in value.values())
    if isinstance(value, list):
        return any(_holds_none(v) for v in value)
    return False


REFUSED = {name: event for name, (event, _) in BROKEN_EVENTS.items() if not _holds_none(event)}
ACCEPTED = {name: event for name, event in VALID_ODDITIES.items() if not _holds_none(event)}


def first_error_path(event: Any) -> str:
    return next(p.path for p in validate_event(event) if p.severity == "error")


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_protobuf_refuses_what_the_reference_rejects(codec, name: str) -> None:
    event = REFUSED[name]
    with pytest.raises(EncodeError) as caught:
        codec.encode_proto(event)
    if isinstance(event, dict) and name not in ("no type", "not an object"):
        assert caught.value.path == first_error_path(event)


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_protobuf_writes_what_the_reference_accepts(codec, name: str) -> None:
    codec.encode_proto(ACCEPTED[name])


# -- SSE: the same refusals, the same words --------------------------------------------

# Events @ag-ui/encoder writes over SSE and its client then rejects (each was
# written by agui_wire's SSE writer too, before it held events to the contract).
WRITTEN_BEFORE: dict[str, Any] = {
    "unknown type": {"type": "NOPE"},
    "delta a number": {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": 5},
    "run started without threadId": {"type": "RUN_STARTED", "runId": "r"},
    "state delta a string": {"type": "STATE_DELTA", "delta": "x"},
    "required None": {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": None},
    "result content None": {
        "type": "TOOL_CALL_RESULT",
        "messageId": "m",
        "toolCallId": "t",
        "content": None,
    },
    "message of an unknown role": {
        "type": "MESSAGES_SNAPSHOT",
        "messages": [{"id": "8", "role": "robot", "name": None}],
    },
    "part of an unknown type": {
        "type": "TOOL_CALL_RESULT",
        "messageId": "m",
        "toolCallId": "t",
        "content": [{"type": "hologram"}],
    },
    "resume status": {
        "type": "RUN_STARTED",
        "threadId": "t",
        "runId": "r",
        "input": {
            "threadId": "t",
            "runId": "r",
            "messages": [],
            "resume": [{"interruptId": "i", "status": "s"}],
        },
    },
    "integer past 2**53 in a value": {"type": "CUSTOM", "name": "n", "value": 2**60},
}


def _sse_encoders() -> list[Any]:
    from agui_wire._codec import proto_writer, sse_writer

    out = [pytest.param(proto_writer.encode_proto, sse_writer.encode_sse, id="python")]
    try:
        from agui_wire import _fast
    except ImportError:
        return out
    return [*out, pytest.param(_fast.encode_proto, _fast.encode_sse, id="cython")]


@pytest.mark.parametrize(("proto", "sse"), _sse_encoders())
@pytest.mark.parametrize("name", sorted({**REFUSED, **WRITTEN_BEFORE}))
def test_sse_refuses_what_protobuf_refuses_with_its_words(proto: Any, sse: Any, name: str) -> None:
    event = {**REFUSED, **WRITTEN_BEFORE}[name]
    with pytest.raises(EncodeError) as by_proto:
        proto(event)
    with pytest.raises(EncodeError) as by_sse:
        sse(event)
    a, b = by_proto.value, by_sse.value
    assert (type(a), a.event_type, a.path, a.reason) == (type(b), b.event_type, b.path, b.reason)


@pytest.mark.parametrize(("proto", "sse"), _sse_encoders())
@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_sse_writes_what_the_reference_accepts(proto: Any, sse: Any, name: str) -> None:
    assert sse(ACCEPTED[name]).startswith(b"data: {")
