"""Measuring what each transport costs for a list of events (``agui-wire cost``).

Strategy: encode each event as the server writes it, once per transport, and
measure:

* bytes: per event (so per event type) and in total, for SSE and protobuf, each
  also compressed with every content coding browsers accept that is installed
  (gzip always; Brotli and Zstandard with their packages: ``agui_wire._compression``),
  *flushed after every event* — what a streaming server has to do for the
  client to see each event when it is sent (Starlette's GZipMiddleware does
  exactly this; buffering the whole response defeats streaming). Whole-response
  gzip is reported alongside, as the lower bound;
* what the events carry: per type, the UTF-8 bytes of their text (``delta`` and
  ``content`` strings), the compact-JSON bytes of their JSON values (the fields
  the schema carries as ``google.protobuf.Value``/``Struct``) and the op names
  and paths of their JSON Patch operations, which the verdict uses to say where
  the bytes go (the rest is envelope: type, ids, JSON syntax);
* CPU per event, on this machine: encoding the run event by event (plus
  compressing, for gzip) and decoding it from the chunks the server wrote
  (``EventDecoder.feed`` per chunk, after decompressing); and the server's cost
  of *writing* each event to a TCP socket on loopback (this thread's CPU), one
  send per event vs coalesced sends of up to 32 KiB as ``EventStreamResponse``
  does — per event, a send costs more than encoding. Each measurement is a
  pass of whole runs (as many as fill about 12 ms, so scheduler noise stays
  small); the median of ``repeats`` passes is kept, the (transport, direction)
  passes interleaved in a rotating order so that drift (thermal, other load)
  hits all of them alike, with the garbage collector off during a pass and one
  warm-up round first.

Contract: ``measure(events)`` needs events every transport can encode with the
options given (``cost`` leaves the others out first, and says so); it returns a
``CostReport`` whose ``verdict`` is still empty.
"""

from __future__ import annotations

import datetime as _dt
import gc
import os
import platform
import socket
import statistics
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final

import orjson

from .._codec import selected
from .._compression import available, compressor, decompressor
from .._decoder import EventDecoder
from .._encoder import encode_proto, encode_sse
from .._mediatypes import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE
from ..schema import BASE_FIELDS, EVENTS, MESSAGES, Field, Kind, MessageSpec
from ._common import CliError
from ._confidence import ratio_interval
from ._costmodel import COALESCE_BYTES, TRANSPORTS, CostReport, TransportCost, split_key
from ._progress import Progress
from .verdict import verdict

__all__ = ["DEFAULT_REPEATS", "Carried", "carried", "measure"]

DEFAULT_REPEATS: Final = 7
PASS_NS: Final = 12_000_000  # a timed pass lasts about this long (whole runs, repeated)


def _compressed(chunks: Sequence[bytes], coding: str, level: int | None) -> list[bytes]:
    """Each chunk compressed and flushed, as a streaming server sends it; the end of
    the compressed stream rides with the last one."""
    comp = compressor(coding, level)
    out = [comp.compress(c) for c in chunks]
    tail = comp.finish()
    if out:
        out[-1] += tail
    else:
        out.append(tail)
    return out


def _whole_gzip(chunks: Sequence[bytes], level: int) -> int:
    comp = zlib.compressobj(level, zlib.DEFLATED, 31)
    return len(comp.compress(b"".join(chunks)) + comp.flush())


def _encoders(
    events: Sequence[dict[str, Any]],
    levels: dict[str, int | None],
    to_proto: Callable[[Any], bytes],
) -> dict[str, Callable[[], object]]:
    def plain(encode: Callable[[Any], bytes]) -> Callable[[], object]:
        def go() -> object:
            return [encode(e) for e in events]

        return go

    def compressed(encode: Callable[[Any], bytes], coding: str) -> Callable[[], object]:
        def go() -> object:
            comp = compressor(coding, levels.get(coding))
            squeeze = comp.compress
            out = [squeeze(encode(e)) for e in events]
            out.append(comp.finish())
            return out

        return go

    encode: dict[str, Callable[[Any], bytes]] = {"sse": encode_sse, "proto": to_proto}
    jobs: dict[str, Callable[[], object]] = {}
    for key, _ in TRANSPORTS:
        base, coding = split_key(key)
        jobs[key] = plain(encode[base]) if coding is None else compressed(encode[base], coding)
    return jobs


def _decoders(wire: dict[str, list[bytes]]) -> dict[str, Callable[[], object]]:
    def go_for(chunks: list[bytes], ctype: str, coding: str | None) -> Callable[[], object]:
        def go() -> object:
            decoder = EventDecoder(ctype)
            feed = decoder.feed
            n = 0
            if coding is None:
                for chunk in chunks:
                    n += len(feed(chunk))
            else:
                inflate = decompressor(coding)
                for chunk in chunks:
                    n += len(feed(inflate(chunk)))
            return n + len(decoder.close())

        return go

    ctypes = {"sse": SSE_MEDIA_TYPE, "proto": PROTO_MEDIA_TYPE}
    out = {}
    for key, _ in TRANSPORTS:
        base, coding = split_key(key)
        out[key] = go_for(wire[key], ctypes[base], coding)
    return out


def _coalesce(chunks: Sequence[bytes], limit: int) -> list[bytes]:
    """The chunks joined into writes of up to about ``limit`` bytes."""
    out: list[bytes] = []
    batch: list[bytes] = []
    size = 0
    for c in chunks:
        batch.append(c)
        size += len(c)
        if size >= limit:
            out.append(b"".join(batch))
            batch, size = [], 0
    if batch:
        out.append(b"".join(batch))
    return out


def _send_cost(wire: dict[str, list[bytes]], repeats: int) -> dict[str, dict[str, float]]:
    """This thread's CPU (µs per event) to write each plain stream to a loopback TCP
    socket: one send per event, and coalesced writes. A reader thread drains the
    other end (its CPU is not counted: ``thread_time``)."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        writer = socket.create_connection(server.getsockname())
        reader, _ = server.accept()
    stop = threading.Event()

    def drain() -> None:
        buf = bytearray(1 << 20)
        while reader.recv_into(buf):
            pass
        stop.set()

    thread = threading.Thread(target=drain, daemon=True)
    thread.start()
    out: dict[str, dict[str, float]] = {}
    try:
        for key in ("sse", "proto"):
            chunks = wire[key]
            modes = {"per_event": list(chunks), "coalesced": _coalesce(chunks, COALESCE_BYTES)}
            runs: dict[str, list[float]] = {m: [] for m in modes}
            for _ in range(repeats):
                for mode, writes in modes.items():
                    send = writer.sendall
                    start = time.thread_time_ns()
                    for w in writes:
                        send(w)
                    runs[mode].append((time.thread_time_ns() - start) / len(chunks) / 1000)
            out[key] = {m: statistics.median(r) for m, r in runs.items()}
    finally:
        writer.close()
        stop.wait(5)
        reader.close()
    return out


def _time(fn: Callable[[], object], loops: int = 1) -> int:
    """Nanoseconds for ``loops`` calls of ``fn``, the garbage collector off."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter_ns()
        for _ in range(loops):
            fn()
        return time.perf_counter_ns() - start
    finally:
        if enabled:
            gc.enable()


def _loops(fn: Callable[[], object], target_ns: int) -> int:
    """How many calls of ``fn`` make one pass last about ``target_ns`` (timeit's autorange)."""
    once = max(_time(fn), 1)
    return max(1, round(target_ns / once))


def _machine() -> dict[str, str]:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cpus": str(os.cpu_count() or "?"),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": platform.platform(terse=True),
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


_TEXT_KEYS: Final = ("delta", "content")  # an event's text: what a user reads or a tool gets


def _json_size(value: object) -> int:
    try:
        return len(orjson.dumps(value))
    except TypeError:  # an integer beyond 64 bits: orjson refuses, JSON does not
        import json

        return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def _is_patch(spec: MessageSpec) -> bool:
    """A JSON Patch operation (RFC 6902): the message with the ``op`` enum."""
    return any(f.kind is Kind.PATCH_OP for f in spec.fields)


def _utf8(value: object) -> int:
    return len(value.encode("utf-8", "surrogatepass")) if isinstance(value, str) else 0


def _walk(obj: dict[str, Any], fields: Sequence[Field], path: str, out: Carried) -> None:
    """Add what ``obj`` carries to ``out``: the compact-JSON bytes of its JSON values
    (fields the schema carries as ``google.protobuf.Value``/``Struct``) by path, and
    the op, path and from of its JSON Patch operations: the state change itself, not
    envelope."""
    for f in fields:
        value = obj.get(f.name)
        if value is None:
            continue
        if f.kind in (Kind.VALUE, Kind.STRUCT):
            out.values[path + f.name] = out.values.get(path + f.name, 0) + _json_size(value)
        elif f.kind is Kind.MESSAGE and f.message is not None and f.message in MESSAGES:
            spec = MESSAGES[f.message]
            items = value if isinstance(value, list) else [value]
            inner = f"{path}{f.name}[]." if isinstance(value, list) else f"{path}{f.name}."
            for item in items:
                if not isinstance(item, dict):
                    continue
                if _is_patch(spec):
                    out.patch += sum(_utf8(item.get(k)) for k in ("op", "path", "from"))
                _walk(item, spec.fields, inner, out)


@dataclass
class Carried:
    """What an event carries besides its envelope (type, ids, JSON syntax), in bytes:
    its text, its JSON values by field path (``{"snapshot": 812}``), and the op names
    and paths of its JSON Patch operations."""

    text: int = 0
    values: dict[str, int] = field(default_factory=dict)
    patch: int = 0


def carried(event: dict[str, Any]) -> Carried:
    """What ``event`` carries besides its envelope (see ``Carried``)."""
    out = Carried(text=sum(_utf8(event.get(key)) for key in _TEXT_KEYS))
    spec = EVENTS.get(str(event.get("type")))
    if spec is not None:
        _walk(event, BASE_FIELDS, "", out)
        _walk(event, spec.message.fields, "", out)
    return out


def _carried_by_type(events: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for e in events:
        got = carried(e)
        row = out.setdefault(
            str(e.get("type")), {"text": 0, "json": 0, "json_fields": {}, "patch": 0}
        )
        row["text"] += got.text
        row["json"] += sum(got.values.values())
        row["patch"] += got.patch
        for name, size in got.values.items():
            row["json_fields"][name] = row["json_fields"].get(name, 0) + size
    return out


def measure(
    events: Sequence[dict[str, Any]],
    *,
    source: str = "events",
    repeats: int = DEFAULT_REPEATS,
    gzip_level: int = 6,
    lossy_numbers: bool = False,
    extra_keys: str = "drop",
    left_out: Sequence[dict[str, Any]] = (),
    input_bytes: int = 0,
    progress: Progress | None = None,
) -> CostReport:
    """Measure every transport on ``events`` (see the module doc) and give the verdict;
    ``lossy_numbers`` and ``extra_keys`` as for ``agui_wire.encode_proto``;
    ``left_out`` (``Skipped.as_dict()``) and ``input_bytes`` say what the events
    came from, for the verdict."""
    if not events:
        raise CliError("no events to measure")
    n = len(events)
    to_proto = partial(encode_proto, lossy_numbers=lossy_numbers, extra_keys=extra_keys)
    sse = [encode_sse(e) for e in events]
    proto = [to_proto(e) for e in events]
    levels: dict[str, int | None] = {"gzip": gzip_level}
    wire = {"sse": sse, "proto": proto}
    for key, _ in TRANSPORTS:
        base, coding = split_key(key)
        if coding is not None:
            wire[key] = _compressed(wire[base], coding, levels.get(coding))
    types = [str(e.get("type")) for e in events]
    carried_by_type = _carried_by_type(events)
    by_type: dict[str, dict[str, int]] = {}
    for key, chunks in wire.items():
        per: Counter[str] = Counter()
        for t, chunk in zip(types, chunks, strict=False):
            per[t] += len(chunk)
        by_type[key] = dict(per)

    # Sanity: every transport carries every event.
    decoders = _decoders(wire)
    for key, fn in decoders.items():
        got = fn()
        if got != n:
            raise CliError(f"internal check failed: {key} decodes to {got} events, not {n}")

    encoders = _encoders(events, levels, to_proto)
    jobs = [(key, "encode", encoders[key]) for key, _ in TRANSPORTS]
    jobs += [(key, "decode", decoders[key]) for key, _ in TRANSPORTS]
    # Warm-up, and as many whole-run calls per pass as make it last PASS_NS, so
    # that scheduler noise is small against what is measured.
    loops = {(key, direction): _loops(fn, PASS_NS) for key, direction, fn in jobs}
    runs: dict[tuple[str, str], list[float]] = {(k, d): [] for k, d, _ in jobs}
    for r in range(repeats):
        shift = (r * 3) % len(jobs)
        for key, direction, fn in jobs[shift:] + jobs[:shift]:
            count = loops[key, direction]
            runs[key, direction].append(_time(fn, count) / count / n / 1000)
            if progress is not None:
                progress.advance()

    transports = [
        TransportCost(
            key=key,
            label=label,
            bytes=sum(len(c) for c in wire[key]),
            encode_us=statistics.median(runs[key, "encode"]),
            decode_us=statistics.median(runs[key, "decode"]),
            by_type=by_type[key],
            encode_runs_us=[round(x, 4) for x in runs[key, "encode"]],
            decode_runs_us=[round(x, 4) for x in runs[key, "decode"]],
        )
        for key, label in TRANSPORTS
    ]
    intervals = {}
    for name, (s_key, p_key) in {
        "uncompressed": ("sse", "proto"),
        "gzip": ("sse+gzip", "proto+gzip"),
    }.items():
        pairs = [(len(a), len(b)) for a, b in zip(wire[s_key], wire[p_key], strict=True)]
        interval = ratio_interval(pairs)
        if interval is not None:
            intervals[name] = [round(x, 4) for x in interval]
    report = CostReport(
        source=source,
        intervals=intervals,
        events=n,
        counts=dict(Counter(types).most_common()),
        text_bytes=sum(row["text"] for row in carried_by_type.values()),
        carried=carried_by_type,
        transports=transports,
        whole_gzip={"sse": _whole_gzip(sse, gzip_level), "proto": _whole_gzip(proto, gzip_level)},
        gzip_level=gzip_level,
        repeats=repeats,
        machine=_machine(),
        implementation=dict(selected.IMPLEMENTATIONS),
        send_us=_send_cost(wire, repeats),
        missing=[c for c in ("br", "zstd") if c not in available()],
        lossy_numbers=lossy_numbers,
        left_out=list(left_out),
        input_bytes=input_bytes,
    )
    report.verdict = verdict(report)
    return report
