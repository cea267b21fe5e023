"""A container inside itself: the same ``EncodeError`` on every transport and backend.

Strategy: each graph (a cycle through a list, tuple, dict, their lying subclasses
and other mappings; closing on the event, on a message-level object or inside a
JSON value) goes through every encoder there is, pure and Cython, SSE and
protobuf, and every one must refuse it with the same reason, event type and
pointer: the place where the walk meets the container again, naming where that
container is. Both protobuf twins find a cycle by identity, as the SSE writers
do, not by running into ``max_depth``: the last test holds a cycle beside a
200,000-item list, which a walk that only counted depth would go round 1,024
times (minutes in Python; it used to be the fuzz_encode timeout, see
tests/fuzz/test_regressions.py).
"""

from __future__ import annotations

from collections import OrderedDict, UserDict
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import pytest

from agui_wire import EncodeError
from agui_wire._codec import proto_writer, sse_writer
from tests.fuzz.fuzzlib import fast_module
from tests.fuzz.graphs import Dict, List, Tuple

FAST = fast_module("SSEEncoder")

Encode = Callable[[Any], bytes]
ENCODERS: dict[str, Encode] = {
    "sse pure": sse_writer.encode_sse,
    "proto pure": proto_writer.encode_proto,
    "proto pure many": lambda e: proto_writer.encode_frames([e]),
}
if FAST is not None:
    ENCODERS |= {
        "sse cython": FAST.encode_sse,
        "proto cython": FAST.encode_proto,
        "proto cython many": lambda e: FAST.encode_frames([e]),
        "proto cython FrameEncoder": FAST.FrameEncoder().encode,
    }


def refusal(encode: Encode, event: Any) -> tuple[str, str | None, str]:
    with pytest.raises(EncodeError) as info:
        encode(event)
    return info.value.reason, info.value.event_type, info.value.path


# one child wrapped in a container of each kind, to close a cycle through it
WRAPS: dict[str, Callable[[Any], Any]] = {
    "list": lambda c: [c],
    "tuple": lambda c: (c,),
    "dict": lambda c: {"k": c},
    "list subclass": lambda c: List([c]),
    "tuple subclass": lambda c: Tuple((c,)),
    "dict subclass": lambda c: Dict(k=c),
    "OrderedDict": lambda c: OrderedDict(k=c),
    "UserDict": lambda c: UserDict(k=c),
    "mappingproxy": lambda c: MappingProxyType({"k": c}),
}


def inner_cycle(wrap: Callable[[Any], Any]) -> Any:
    """[wrap([...])]: a list holding a container of the kind that holds the list."""
    loop: list[Any] = ["x"]
    loop.append(wrap(loop))
    return loop


def on_the_event(wrap: Callable[[Any], Any]) -> dict[str, Any]:
    event: dict[str, Any] = {"type": "RAW", "source": "s"}
    event["event"] = [1, wrap(event)]
    return event


def on_a_message(wrap: Callable[[Any], Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"id": "m", "role": "user", "content": "hi"}
    message["metadata"] = {"back": wrap(message)}
    return {"type": "MESSAGES_SNAPSHOT", "messages": [message]}


def on_run_input(wrap: Callable[[Any], Any]) -> dict[str, Any]:
    run_input: dict[str, Any] = {"threadId": "t", "runId": "r", "messages": []}
    run_input["state"] = wrap(run_input)
    return {"type": "RUN_STARTED", "threadId": "t", "runId": "r", "input": run_input}


# graph -> (the container met again, the pointer where it is met, for the "list" wrap)
GRAPHS: dict[str, tuple[Callable[[Callable[[Any], Any]], Any], str, str]] = {
    "value": (
        lambda w: {"type": "CUSTOM", "name": "n", "value": inner_cycle(w)},
        "the container at /value",
        "/value/1/0",
    ),
    "event": (on_the_event, "the event", "/event/1/0"),
    "message": (on_a_message, "the container at /messages/0", "/messages/0/metadata/back/0"),
    "run input": (on_run_input, "the container at /input", "/input/state/0"),
}


@pytest.mark.parametrize("kind", list(WRAPS))
@pytest.mark.parametrize("graph", list(GRAPHS))
def test_a_cycle_is_the_same_refusal_everywhere(graph: str, kind: str) -> None:
    build, owner, path = GRAPHS[graph]
    event = build(WRAPS[kind])
    got = {name: refusal(encode, event) for name, encode in ENCODERS.items()}
    want = got["sse pure"]
    assert want[0] == f"a cycle: this is {owner} again, inside itself"
    if kind == "list":
        assert want[2] == path
    assert all(r == want for r in got.values()), got


@pytest.mark.parametrize("kind", ["list", "dict", "tuple subclass"])
def test_a_container_holding_itself_at_once(kind: str) -> None:
    loop: Any = WRAPS[kind](None)
    if isinstance(loop, list):
        loop[0] = loop
        key = "0"
    elif isinstance(loop, dict):
        loop["k"] = loop
        key = "k"
    else:
        inner: list[Any] = []
        loop = Tuple((inner,))
        inner.append(loop)
        key = "0/0"
    event = {"type": "STATE_SNAPSHOT", "snapshot": {"s": loop}}
    got = {name: refusal(encode, event) for name, encode in ENCODERS.items()}
    assert set(got.values()) == {
        (
            "a cycle: this is the container at /snapshot/s again, inside itself",
            "STATE_SNAPSHOT",
            f"/snapshot/s/{key}",
        )
    }, got


def test_a_shared_container_is_no_cycle() -> None:
    shared = {"a": [1, 2]}
    event = {"type": "CUSTOM", "name": "n", "value": [shared, (shared, [shared])]}
    outs = {name.split()[0]: set() for name in ENCODERS}
    for name, encode in ENCODERS.items():
        outs[name.split()[0]].add(encode(event))
    assert all(len(o) == 1 for o in outs.values())


def test_deeper_than_max_depth_without_a_cycle_is_still_the_depth_error() -> None:
    value: Any = 1
    for _ in range(40):
        value = [value]
    event = {"type": "CUSTOM", "name": "n", "value": value}
    for encode in (proto_writer.encode_proto, *((FAST.encode_proto,) if FAST else ())):
        with pytest.raises(EncodeError, match="nested deeper than max_depth=30") as info:
            encode(event, max_depth=30)
        assert info.value.path == "/value" + "/0" * 30


def test_a_cycle_beside_a_wide_list_is_found_by_identity() -> None:
    # Going round the cycle until max_depth would walk the wide list 1,024 times
    # (the SSE writers' first scan: 254 times, seconds at this width).
    loop: list[Any] = [list(range(200_000))]
    loop.append(loop)
    event = {"type": "CUSTOM", "name": "n", "value": loop}
    got = {name: refusal(encode, event) for name, encode in ENCODERS.items()}
    assert set(got.values()) == {
        ("a cycle: this is the container at /value again, inside itself", "CUSTOM", "/value/1")
    }, got


def _own_outcome() -> dict[str, Any]:
    event: dict[str, Any] = {"type": "SUBAGENT_FINISHED", "subagentRunId": "s"}
    event["outcome"] = event
    return event


def _outcome_in_its_payload() -> dict[str, Any]:
    outcome: dict[str, Any] = {"type": "interrupt"}
    outcome["interrupts"] = [outcome]
    return {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": outcome}


def _messages_as_tool_calls() -> dict[str, Any]:
    messages: list[Any] = []
    function = {"name": "f", "arguments": ""}
    messages.append(
        {
            "id": "m",
            "role": "assistant",
            "toolCalls": messages,
            "type": "function",
            "function": function,
        }
    )
    return {"type": "MESSAGES_SNAPSHOT", "messages": messages}


def _message_as_a_function() -> dict[str, Any]:
    message: dict[str, Any] = {"id": "m", "role": "assistant", "name": "f", "arguments": ""}
    message["toolCalls"] = [{"id": "c", "type": "function", "function": message}]
    return {"type": "MESSAGES_SNAPSHOT", "messages": [message]}


# An event, message or list the schema reads as a message, met again where it reads
# one (not inside a JSON value): each inner object is valid as what it is read as, so
# only the cycle is wrong (the Cython protobuf encoder used to write these; found by
# fuzz_encode, tests/fuzz/test_regressions.py).
MESSAGE_LEVEL: dict[str, tuple[Callable[[], Any], str, str]] = {
    "own outcome": (_own_outcome, "the event", "/outcome"),
    "outcome in its payload": (
        _outcome_in_its_payload,
        "the container at /outcome",
        "/outcome/interrupts/0",
    ),
    "messages as tool calls": (
        _messages_as_tool_calls,
        "the container at /messages",
        "/messages/0/toolCalls",
    ),
    "message as a function": (
        _message_as_a_function,
        "the container at /messages/0",
        "/messages/0/toolCalls/0/function",
    ),
}


@pytest.mark.parametrize("graph", list(MESSAGE_LEVEL))
def test_a_cycle_between_messages_is_refused_everywhere(graph: str) -> None:
    build, owner, path = MESSAGE_LEVEL[graph]
    event = build()
    got = {name: refusal(encode, event) for name, encode in ENCODERS.items()}
    want = (f"a cycle: this is {owner} again, inside itself", event["type"], path)
    assert set(got.values()) == {want}, got


def test_a_message_shared_between_fields_is_no_cycle() -> None:
    # a message object used twice, side by side, is written twice
    message = {"id": "m", "role": "user", "content": [{"type": "text", "text": "t"}]}
    function = {"name": "f", "arguments": "{}"}
    calls = [{"id": "c", "type": "function", "function": function}] * 2
    event = {
        "type": "MESSAGES_SNAPSHOT",
        "messages": [message, message, {"id": "a", "role": "assistant", "toolCalls": calls}],
    }
    outs: dict[str, set[bytes]] = {name.split()[0]: set() for name in ENCODERS}
    for name, encode in ENCODERS.items():
        outs[name.split()[0]].add(encode(event))
    assert all(len(o) == 1 for o in outs.values()), outs
