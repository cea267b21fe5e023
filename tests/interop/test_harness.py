"""The harness reports what the reference does, including when it refuses.

Strategy: a handful of reference behaviours from wire-contract.md (§0, §4, §6, §7)
with known answers, one per harness subcommand and outcome kind, so a harness
that silently lost errors, warnings or bytes would fail here before it misled
the codec tests built on it.
"""

from __future__ import annotations

import struct

import pytest

pytestmark = pytest.mark.interop

PROTO_MEDIA_TYPE = "application/vnd.ag-ui.event+proto"
SSE_MEDIA_TYPE = "text/event-stream"

MIB10 = 10 * 1024 * 1024


def frame(message: bytes) -> bytes:
    return struct.pack(">I", len(message)) + message


def test_versions_are_pinned(node_harness) -> None:
    versions = node_harness.versions()
    assert {
        versions[p] for p in ("@ag-ui/core", "@ag-ui/proto", "@ag-ui/encoder", "@ag-ui/client")
    } == {"1.0.0"}


def test_encode_proto_bytes(node_harness) -> None:
    # wire-contract §1.1: an empty base_event is still written for TEXT_MESSAGE_START.
    [f] = node_harness.encode_proto([{"type": "TEXT_MESSAGE_START", "messageId": ""}])
    assert f == bytes.fromhex("00000004 0a020a00")
    assert node_harness.split_frames(f) == [bytes.fromhex("0a020a00")]
    assert node_harness.frame(bytes.fromhex("0a020a00")) == f


def test_encode_proto_reports_errors_and_warnings(node_harness) -> None:
    unknown_op = {"type": "STATE_DELTA", "delta": [{"op": "nope", "path": ""}]}
    unknown_type = {"type": "FOO_BAR"}
    invalid = {"type": "SUBAGENT_STARTED"}
    a, b, c = node_harness.encode_proto_results([unknown_op, unknown_type, invalid])
    assert (a.frame, a.error.message) == (None, "invalid int32: undefined")
    assert (b.frame, b.error, b.warnings) == (b"\0\0\0\0", None, ())
    assert c.error is None
    assert c.warnings
    with pytest.raises(node_harness.Rejected):
        node_harness.encode_proto([invalid])


def test_decode_proto_results(node_harness) -> None:
    good = bytes.fromhex("0a020a00")
    unknown_arm = bytes.fromhex("820200")  # field 32, an empty message
    mismatch = bytes.fromhex("12040a020805")  # TEXT_MESSAGE_CONTENT arm, base says TOOL_CALL_END
    results = node_harness.decode_proto(
        [frame(good), frame(unknown_arm), frame(b""), frame(mismatch)]
    )
    assert results[0].event == {"messageId": "", "type": "TEXT_MESSAGE_START"}
    assert results[1].error.unknown_event_type
    assert results[1].error.name == "AGUIUnknownEventTypeError"
    assert (results[2].error.message, results[2].error.unknown_event_type) == (
        "Invalid event",
        False,
    )
    assert "declares TOOL_CALL_END" in results[3].error.message
    with pytest.raises(node_harness.Rejected):
        node_harness.decode_proto_events(frame(b""))
    with pytest.raises(node_harness.HarnessError, match="partial frame"):
        node_harness.decode_proto(frame(good)[:-1])


def test_decoded_doubles_survive(node_harness) -> None:
    [f] = node_harness.encode_proto(
        [{"type": "CUSTOM", "name": "n", "value": [-0.0, 5e-324, 1e21]}]
    )
    [event] = node_harness.decode_proto_events(f)
    value = event["value"]
    assert value == [0.0, 5e-324, 1e21]
    assert str(value[0]) == "-0.0"  # -0 survives the harness (JSON.stringify would print 0)


def test_parse_stream_content_type_is_exact(node_harness) -> None:
    """wire-contract §0: only the exact media type selects the binary parser."""
    [f] = node_harness.encode_proto([{"type": "STEP_STARTED", "stepName": "s"}])
    binary = node_harness.parse_stream(f, PROTO_MEDIA_TYPE, chunk_size=1)
    assert binary.events == [{"stepName": "s", "type": "STEP_STARTED"}]
    assert binary.completed
    for other in (PROTO_MEDIA_TYPE + "; charset=binary", PROTO_MEDIA_TYPE.upper(), None):
        as_sse = node_harness.parse_stream(f, other)
        assert as_sse.events == []  # no "data:" line in those bytes: nothing parsed
        assert as_sse.completed


def test_parse_stream_errors(node_harness) -> None:
    [f] = node_harness.encode_proto([{"type": "STEP_STARTED", "stepName": "s"}])
    unknown = frame(bytes.fromhex("820200"))
    dropped = node_harness.parse_stream(unknown + f, PROTO_MEDIA_TYPE)
    assert len(dropped.events) == 1
    assert dropped.completed
    assert "Dropped an event" in dropped.warnings[0]

    cut = node_harness.parse_stream(f + f[:-2], PROTO_MEDIA_TYPE, chunk_size=3)
    assert len(cut.events) == 1
    assert not cut.completed
    assert cut.error.message.startswith("The binary stream ended mid-frame: ")

    # The 10 MiB limit is judged from the prefix alone (4 + N > 10 MiB).
    too_big = node_harness.parse_stream((MIB10 - 3).to_bytes(4, "big"), PROTO_MEDIA_TYPE)
    assert "exceeded maximum limit of 10 MB" in too_big.error.message
    just_fits = node_harness.parse_stream((MIB10 - 4).to_bytes(4, "big"), PROTO_MEDIA_TYPE)
    assert "mid-frame" in just_fits.error.message

    sse = node_harness.parse_stream(b'data: {"type":""}\n\n', SSE_MEDIA_TYPE)
    assert sse.error.message == "Invalid event: the frame carries no event type."


def test_encode_sse_bytes(node_harness) -> None:
    out = node_harness.encode_sse(
        [{"type": "CUSTOM", "name": "\u2028", "value": [1e21, 1e-7, 100.0, -0.0, "é/"]}]
    )
    assert (
        out
        == 'data: {"type":"CUSTOM","name":"\u2028","value":[1e+21,1e-7,100,0,"é/"]}\n\n'.encode()
    )


def test_negotiate(node_harness) -> None:
    """A few rows of wire-contract §7."""
    table = {
        None: SSE_MEDIA_TYPE,
        "": SSE_MEDIA_TYPE,
        "*/*": PROTO_MEDIA_TYPE,
        "APPLICATION/VND.AG-UI.EVENT+PROTO": PROTO_MEDIA_TYPE,
        PROTO_MEDIA_TYPE + ";q=0": SSE_MEDIA_TYPE,
        PROTO_MEDIA_TYPE + ";charset=utf-8": SSE_MEDIA_TYPE,
        PROTO_MEDIA_TYPE + ";q=0.5;foo=bar": PROTO_MEDIA_TYPE,
        "text/event-stream, */*;q=0.1": PROTO_MEDIA_TYPE,
        PROTO_MEDIA_TYPE + ";q=0, */*": SSE_MEDIA_TYPE,
        "text/*": SSE_MEDIA_TYPE,
    }
    assert node_harness.negotiate(list(table)) == list(table.values())


def test_harness_usage_errors(node_harness) -> None:
    with pytest.raises(node_harness.HarnessError, match="usage"):
        node_harness.run("no-such-command")
    with pytest.raises(node_harness.HarnessError, match="not JSON"):
        node_harness.run("validate", b"{nope\n")


def test_judge_gives_both_verdicts_in_order(reference_judge) -> None:
    events = [
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "d"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": None},  # null rule
        {"type": "NOPE"},
        {"type": "STEP_STARTED", "stepName": "s", "timestamp": float("nan")},  # as null
        {"type": "CUSTOM", "name": "n", "value": "a\ud800"},  # a JS string may hold it
    ] * 300  # more than a pipe holds, in one call
    verdicts = reference_judge.judge(events)
    assert [(v.event.ok, v.wire.ok) for v in verdicts[:5]] == [
        (True, True),
        (False, True),
        (False, False),
        (False, False),
        (True, True),
    ]
    assert verdicts[1].event.issues[0][0] == ("role",)
    assert verdicts[3].wire.issues[0][0] == ("timestamp",)
    assert verdicts[5:] == verdicts[:5] * 299


def test_reference_shapes_name_what_the_schemas_name(node_harness) -> None:
    from tests.support.verdicts import ReferenceShapes

    shapes = ReferenceShapes(node_harness.shapes(), node_harness.zod_objects())
    event = {
        "type": "MESSAGES_SNAPSHOT",
        "messages": [
            {"id": "a", "role": "user", "content": [{"type": "text", "text": "t", "x": 1}], "y": 2},
            {"id": "b", "role": "NOPE", "content": "c", "toolCallId": "t", "z": 3},
        ],
        "metadata": {"any": {"key": 1}},
        "extra": 4,
    }
    assert shapes.named(event) == {
        "type": "MESSAGES_SNAPSHOT",
        "messages": [
            {"id": "a", "role": "user", "content": [{"type": "text", "text": "t"}]},
            # an unknown role keeps what any role names
            {"id": "b", "role": "NOPE", "content": "c", "toolCallId": "t"},
        ],
        "metadata": {"any": {"key": 1}},  # opaque: whole
    }
    assert shapes.named({"type": "NOPE", "x": 1}) == {"type": "NOPE", "x": 1}
