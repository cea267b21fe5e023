"""Every contender, as an untimed ``prepare`` and a timed ``run`` over one workload.

A contender's ``prepare(workload)`` builds its input outside the clock (pydantic
objects, wire bytes, frames); ``run(input)`` is what gets timed and returns its
output, which ``check`` compares with the workload's events once, untimed. Every
contender in a section gets the same workload: the same dicts to encode, the same
bytes to decode.

Per-event contenders are written ``[f(x) for x in xs]`` (``per_item``) so they
share one loop shape; ``f`` alone is kept to count failures event by event.
"""

from __future__ import annotations

import functools
import importlib.util
import io
import re
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from google.protobuf import json_format
from workloads import Event, Workload

import agui_wire
from agui_wire._codec import framing, proto_reader, proto_writer, selected, upb
from agui_wire._encoder import as_event_dict
from agui_wire._pb import events_pb2

PROTO = agui_wire.PROTO_MEDIA_TYPE
SSE = agui_wire.SSE_MEDIA_TYPE
ORJSON_SSE = 'orjson: b"data: " + dumps(e) + b"\\n\\n"'
_U32 = struct.Struct(">I")
_pack = _U32.pack


@dataclass(frozen=True)
class Contender:
    name: str
    transport: str  # "protobuf", "SSE" or "" (framing only)
    prepare: Callable[[Workload], Any]
    run: Callable[[Any], Any]
    output: str  # what ``run`` returns: "proto", "sse", "events", "batches", "pydantic", "none"
    each: Callable[[Any], Any] | None = None  # the per-item function, for failure counts
    items: Callable[[Any], Sequence[Any]] | None = None  # the items ``each`` takes
    note: str = ""


def slug(c: Contender) -> str:
    """A short test id: the name's words and the transport."""
    words = re.findall(r"[A-Za-z0-9_.]+", c.name.split("(")[0])
    return "-".join([*words[:4], c.transport or "none"])


def per_item(f: Callable[[Any], Any]) -> dict[str, Any]:
    """``run``/``each``/``items`` for a contender that handles one item per call."""
    return {"run": lambda xs: [f(x) for x in xs], "each": f, "items": lambda xs: xs}


def differences(c: Contender, w: Workload, out: Any) -> int:
    """How many events the output gets wrong (0 when it matches the workload)."""
    kind = c.output
    if kind == "none":
        return 0
    if kind == "proto":
        data = out if isinstance(out, bytes) else b"".join(out)
        got = agui_wire.decode_proto(data)
    elif kind == "sse":
        data = out if isinstance(out, bytes) else b"".join(utf8(x) for x in out)
        got = [orjson.loads(chunk[6:]) for chunk in data.split(b"\n\n")[:-1]]
    elif kind == "batches":
        got = [e for batch in out for e in batch]
    elif kind == "pydantic":
        got = [as_event_dict(o) for o in out]
    else:
        got = out
    if len(got) != len(w.events):
        return abs(len(got) - len(w.events)) or 1
    return sum(a != b for a, b in zip(got, w.events, strict=True))


def utf8(x: bytes | str) -> bytes:
    return x.encode() if isinstance(x, str) else x


# -- the official Python SDK (ag-ui-protocol 1.0.0) ------------------------------------


HAVE_SDK = importlib.util.find_spec("ag_ui") is not None


@functools.cache
def sdk() -> tuple[Any, dict[str, Any], Any]:
    """(EventEncoder, {type: event class}, TypeAdapter(Event)) of the official SDK."""
    import ag_ui.core as core
    from ag_ui.core import Event as SdkEvent
    from ag_ui.core import EventType
    from ag_ui.encoder import EventEncoder as SdkEncoder
    from pydantic import TypeAdapter

    classes: dict[str, Any] = {}
    for name in dir(core):
        cls = getattr(core, name)
        fields = getattr(cls, "model_fields", None)
        if isinstance(cls, type) and fields and "type" in fields:
            default = fields["type"].default
            if isinstance(default, EventType):
                classes[default.value] = cls
    return SdkEncoder(), classes, TypeAdapter(SdkEvent)


def sdk_objects(events: Sequence[Event]) -> list[Any]:
    _, classes, _ = sdk()
    return [classes[e["type"]].model_validate(e) for e in events]


# -- json_format: AG-UI JSON <-> proto3 JSON of ag_ui.Event ------------------------------
# json_format speaks proto3 JSON (the oneof arm as a key, a nested baseEvent, enum
# names, int64 as strings), not AG-UI JSON, so a user of ParseDict/MessageToDict
# needs this reshaping; it is timed with them. Shapes the realistic workload does
# not use (messages, content parts, subagent outcomes) are refused, not faked.

_ARM_BY_TYPE = {f.name.upper(): f.json_name for f in events_pb2.Event.DESCRIPTOR.fields}
_TYPE_BY_ARM = {arm: t for t, arm in _ARM_BY_TYPE.items()}
_UNSUPPORTED = frozenset({"MESSAGES_SNAPSHOT", "SUBAGENT_FINISHED", "RUN_STARTED_WITH_INPUT"})
_BASE_KEYS = ("timestamp", "rawEvent", "metadata")
_USAGE_INT64 = frozenset(
    {
        "inputTokens",
        "outputTokens",
        "totalTokens",
        "reasoningTokens",
        "cachedInputTokens",
        "cacheWriteInputTokens",
    }
)


def to_proto_json(event: Event) -> dict[str, Any]:
    body = dict(event)
    kind = body.pop("type")
    if kind in _UNSUPPORTED or (kind == "RUN_STARTED" and "input" in body):
        raise NotImplementedError(f"json_format shim does not reshape {kind}")
    base: dict[str, Any] = {"type": kind}
    for key in _BASE_KEYS:
        if key in body:
            base[key] = body.pop(key)
    if kind in ("STATE_DELTA", "ACTIVITY_DELTA"):
        key = "delta" if kind == "STATE_DELTA" else "patch"
        body[key] = [{**op, "op": op["op"].upper()} for op in body[key]]
    elif kind == "RUN_FINISHED" and "outcome" in body:
        outcome = dict(body.pop("outcome"))
        body["outcome"] = outcome.pop("type")
        body.update(outcome)  # pendingToolCallIds / interrupts sit beside it on the wire
    elif kind == "TOOL_CALL_RESULT" and not isinstance(body.get("content", ""), str):
        raise NotImplementedError("json_format shim does not reshape content parts")
    body["baseEvent"] = base
    return {_ARM_BY_TYPE[kind]: body}


def from_proto_json(obj: dict[str, Any]) -> Event:
    ((arm, body),) = obj.items()
    kind = _TYPE_BY_ARM[arm]
    if kind in _UNSUPPORTED:
        raise NotImplementedError(f"json_format shim does not reshape {kind}")
    base = body.pop("baseEvent", {})
    out: Event = {"type": kind}
    if "timestamp" in base:
        out["timestamp"] = int(base["timestamp"])  # int64 is a string in proto3 JSON
    for key in ("rawEvent", "metadata"):
        if key in base:
            out[key] = base[key]
    if kind in ("STATE_DELTA", "ACTIVITY_DELTA"):
        key = "delta" if kind == "STATE_DELTA" else "patch"
        body[key] = [{**op, "op": op.get("op", "ADD").lower()} for op in body.get(key, [])]
    elif kind == "RUN_FINISHED":
        outcome: dict[str, Any] = {"type": body.pop("outcome")} if body.get("outcome") else {}
        for key in ("pendingToolCallIds", "interrupts"):
            if key in body:
                outcome[key] = body.pop(key)
        if outcome:
            body["outcome"] = outcome
        if "usage" in body:
            body["usage"] = [
                {k: int(v) if k in _USAGE_INT64 else v for k, v in u.items()} for u in body["usage"]
            ]
    out.update(body)
    return out


def _parse_dict_frame(event: Event) -> bytes:
    payload = json_format.ParseDict(to_proto_json(event), events_pb2.Event()).SerializeToString()
    return _pack(len(payload)) + payload


def _upb_frame(event: Event) -> bytes:
    payload = upb.event_to_proto(event).SerializeToString()
    return _pack(len(payload)) + payload


def _message_to_dict(payload: bytes | memoryview) -> Event:
    return from_proto_json(json_format.MessageToDict(events_pb2.Event.FromString(payload)))


def _from_proto(payload: bytes | memoryview) -> Event:
    return upb.event_from_proto(events_pb2.Event.FromString(payload))


def _framed(f: Callable[[Any], Any]) -> dict[str, Any]:
    """A per-payload decoder over a framed stream, split by agui_wire's framer so
    the comparison isolates the message decoding."""

    def run(data: bytes) -> list[Any]:
        return [f(p) for p in selected.FrameReader().feed(data)]

    return {"run": run, "each": f, "items": lambda data: selected.FrameReader().feed(data)}


def _orjson_sse(event: Event, dumps: Callable[[Any], bytes] = orjson.dumps) -> bytes:
    return b"data: " + dumps(event) + b"\n\n"


def _orjson_sse_decode(data: bytes, loads: Callable[[Any], Any] = orjson.loads) -> list[Any]:
    return [loads(chunk[6:]) for chunk in data.split(b"\n\n")[:-1]]


def _sdk_from_dict() -> Callable[[Event], bytes]:
    encoder, classes, _ = sdk()
    encode = encoder.encode

    def f(event: Event) -> bytes:
        return encode(classes[event["type"]].model_validate(event)).encode()

    return f


def encoders(section: str) -> list[Contender]:
    """Encoders for ``section``: "run" (whole run), "hot" (per event) or "snapshot"."""
    proto = agui_wire.EventEncoder(PROTO)
    sse = agui_wire.EventEncoder()
    sdk_encode = sdk()[0].encode
    out: list[Contender] = []
    ident = lambda w: w.events  # noqa: E731
    if section == "hot":
        out.append(
            Contender(
                "loop floor: [id(e) for e in events]", "", ident, output="none", **per_item(id)
            )
        )
    if section == "run":
        out.append(
            Contender(
                "agui_wire EventEncoder.encode_many", "protobuf", ident, proto.encode_many, "proto"
            )
        )
    out.append(
        Contender(
            "agui_wire EventEncoder.encode",
            "protobuf",
            ident,
            output="proto",
            **per_item(proto.encode),
        )
    )
    if section == "hot":
        out.append(
            Contender(
                "agui_wire encode_proto",
                "protobuf",
                ident,
                output="proto",
                **per_item(agui_wire.encode_proto),
            )
        )
    if section == "run" and selected.NAME == "cython":
        out.append(
            Contender(
                "agui_wire pure-Python twin (proto_writer.encode_frames)",
                "protobuf",
                ident,
                proto_writer.encode_frames,
                "proto",
                note="what AGUI_WIRE_PURE=1 or a missing extension runs",
            )
        )
    if section == "run":
        out.append(
            Contender("agui_wire EventEncoder.encode_many", "SSE", ident, sse.encode_many, "sse")
        )
    out += [
        Contender(
            "agui_wire EventEncoder.encode", "SSE", ident, output="sse", **per_item(sse.encode)
        ),
        Contender(
            ORJSON_SSE,
            "SSE",
            ident,
            output="sse",
            **per_item(_orjson_sse),
        ),
        Contender(
            "official SDK from dicts (model_validate + encode)",
            "SSE",
            ident,
            output="sse",
            **per_item(_sdk_from_dict()),
            note="per-type class lookup (faster than TypeAdapter over the union)",
        ),
        Contender(
            "official SDK from pydantic objects (encode)",
            "SSE",
            lambda w: sdk_objects(w.events),
            output="sse",
            **per_item(lambda o: sdk_encode(o).encode()),
            note="objects built untimed; str output encoded to UTF-8 as a server does",
        ),
    ]
    if section == "run":
        out.append(
            Contender(
                "agui_wire encode_many from SDK pydantic objects",
                "protobuf",
                lambda w: sdk_objects(w.events),
                proto.encode_many,
                "proto",
                note="model_dump per event, then the protobuf encoder",
            )
        )
    out += [
        Contender(
            "upb: event_to_proto(e).SerializeToString()",
            "protobuf",
            ident,
            output="proto",
            **per_item(_upb_frame),
        ),
        Contender(
            "upb: json_format.ParseDict + SerializeToString",
            "protobuf",
            ident,
            output="proto",
            **per_item(_parse_dict_frame),
            note="includes reshaping AG-UI JSON to proto3 JSON",
        ),
    ]
    return out


def decoders(section: str) -> list[Contender]:
    """Decoders for ``section``; every one reads the same bytes (or per-event slices)."""
    out: list[Contender] = []
    if section == "hot":
        # One decoder per stream, fed one event's bytes per call, as a live client is.
        def feed_all(prepared: tuple[agui_wire.EventDecoder, list[bytes]]) -> list[Any]:
            decoder, chunks = prepared
            return [decoder.feed(c) for c in chunks]

        out += [
            Contender(
                "agui_wire EventDecoder.feed (one frame per feed)",
                "protobuf",
                lambda w: (agui_wire.EventDecoder(PROTO), w.frames),
                feed_all,
                "batches",
            ),
            Contender(
                "agui_wire selected.decode_payload (no framing)",
                "protobuf",
                lambda w: w.payloads,
                output="events",
                **per_item(selected.decode_payload),
            ),
            Contender(
                "agui_wire EventDecoder.feed (one event per feed)",
                "SSE",
                lambda w: (agui_wire.EventDecoder(SSE), w.sse_events),
                feed_all,
                "batches",
            ),
            Contender(
                "orjson.loads(event[6:])",
                "SSE",
                lambda w: w.sse_events,
                output="events",
                **per_item(lambda c: orjson.loads(c[6:])),
            ),
            Contender(
                "upb: FromString + MessageToDict",
                "protobuf",
                lambda w: w.payloads,
                output="events",
                **per_item(_message_to_dict),
                note="includes reshaping proto3 JSON to AG-UI JSON",
            ),
            Contender(
                "upb: event_from_proto(Event.FromString(p))",
                "protobuf",
                lambda w: w.payloads,
                output="events",
                **per_item(_from_proto),
            ),
        ]
        return out
    _, _, adapter = sdk()
    out += [
        Contender(
            "agui_wire decode_proto",
            "protobuf",
            lambda w: w.proto,
            agui_wire.decode_proto,
            "events",
        ),
    ]
    if section == "run" and selected.NAME == "cython":
        out.append(
            Contender(
                "agui_wire pure-Python twins (framing + proto_reader)",
                "protobuf",
                lambda w: w.proto,
                lambda d: [proto_reader.decode_payload(p) for p in framing.FrameReader().feed(d)],
                "events",
                note="what AGUI_WIRE_PURE=1 or a missing extension runs",
            )
        )
    if section == "run":
        out.append(
            Contender(
                "agui_wire iter_decode(file, 64 KiB reads)",
                "protobuf",
                lambda w: w.proto,
                lambda d: list(agui_wire.iter_decode(io.BytesIO(d), PROTO)),
                "events",
            )
        )
    out += [
        Contender(
            "agui_wire decode", "SSE", lambda w: w.sse, lambda d: agui_wire.decode(d, SSE), "events"
        ),
        Contender(
            "orjson: split + loads",
            "SSE",
            lambda w: w.sse,
            _orjson_sse_decode,
            "events",
            note="no SSE parsing: assumes one data line per event",
        ),
        Contender(
            "upb: FromString + MessageToDict",
            "protobuf",
            lambda w: w.proto,
            output="events",
            **_framed(_message_to_dict),
            note="includes reshaping proto3 JSON to AG-UI JSON",
        ),
        Contender(
            "upb: event_from_proto(Event.FromString(p))",
            "protobuf",
            lambda w: w.proto,
            output="events",
            **_framed(_from_proto),
        ),
        Contender(
            "official SDK: split + TypeAdapter(Event).validate_json",
            "SSE",
            lambda w: w.sse,
            output="pydantic",
            run=lambda d: [adapter.validate_json(c[6:]) for c in d.split(b"\n\n")[:-1]],
            note="pydantic objects, not dicts (the SDK has no decoder)",
        ),
    ]
    return out


def run_benchmark(benchmark: Any, group: str, c: Contender, w: Workload) -> None:
    """One pytest-benchmark test: ``c`` on ``w``, output checked against the events."""
    benchmark.group = group
    benchmark.extra_info.update(events=w.count, transport=c.transport, contender=c.name)
    prepared = c.prepare(w)
    out = benchmark(c.run, prepared)
    assert differences(c, w, out) == 0, f"{c.name}: output differs from the events"
