"""Fuzz target: the encoders (SSE and protobuf frames, Cython and pure) on object graphs.

Strategy: the input is a program over a corpus event (graphs.py): byte 0 picks
the mode, bytes 1-2 the event of tests/support/corpus.py, the rest turn its nodes
into every container kind (dict, list, tuple, their lying subclasses, other
mappings), odd scalars (lying str/int/float subclasses, enums, the SDK's
``EventType``), generated values (ints at 2^53/2^63/2^64/10^400, NaN, ±inf,
lone surrogates, bytes, sets, objects, non-string keys), nests near and beyond
1,024 levels, big arrays, shared nodes and cycles through any container. Mode
bit 0 also hands the event to the official SDK (``ag_ui.core``) and encodes the
pydantic object it makes.

Contract checked, on both transports: the Cython and the pure encoders give the
same bytes or the same ``EncodeError`` (class, message, event type, pointer),
and nothing else escapes; ``encode_many([e])`` is ``encode(e)``; the graph
encodes exactly as its twin in plain JSON types (values are read by what they
hold; an error names the same place; its message may name a
Python type); what encodes decodes back: protobuf to ``normalize(twin)``, SSE to the
twin less the optional keys that were ``None``; an SDK object encodes as the
SDK itself writes it (SSE) and the same on both backends.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Mapping
from typing import Any

if __name__ == "__main__":
    import atheris

    _instrumented: Any = atheris.instrument_imports(include=["agui_wire", "fuzzlib", "graphs"])
else:
    _instrumented = contextlib.nullcontext()

with _instrumented:
    from agui_wire import EncodeError, decode, normalize
    from agui_wire._codec import proto_reader, proto_writer, sse_writer
    from agui_wire._codec.proto_writer import as_event_dict
    from tests.fuzz.fuzzlib import fast_module, same_json
    from tests.fuzz.graphs import Builder
    from tests.support.corpus import CORPUS

SEEDS = "graphs"
SSE = "text/event-stream"


def _encoders(sse: Any, proto: Any) -> dict[str, Any]:
    """The entry points of one backend, by transport (the "many" ones convert SDK
    objects as ``EventEncoder`` has them do)."""
    return {
        "sse": sse.encode_sse,
        "sse many": lambda e: sse.SSEEncoder(convert=as_event_dict).encode_many([e]),
        "proto": proto.encode_proto,
        "proto many": lambda e: proto.FrameEncoder(convert=as_event_dict).encode_many([e]),
    }


def _backends() -> list[tuple[str, dict[str, Any]]]:
    out = [("pure", _encoders(sse_writer, proto_writer))]
    fast = fast_module("SSEEncoder")
    if fast is not None:
        out.append(("cython", _encoders(fast, fast)))
    return out


BACKENDS = _backends()
PURE = BACKENDS[0][1]


def result(fn: Any, event: Any) -> tuple[Any, ...]:
    """The bytes, or everything an ``EncodeError`` says; any other exception escapes."""
    try:
        return ("ok", fn(event))
    except EncodeError as exc:
        return ("error", type(exc), str(exc), exc.reason, exc.event_type, exc.path)


def same_place(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """The same bytes, or an error of the same class, event type and pointer."""
    return a == b if a[0] == "ok" else (a[0], a[1], a[4], a[5]) == (b[0], b[1], b[4], b[5])


def show(r: tuple[Any, ...]) -> str:
    text = repr(r[1]) if r[0] == "ok" else f"{r[1].__name__}: {r[2]}"
    return text if len(text) < 400 else text[:400] + "..."


def sse_keeps(got: Any, want: Any) -> bool:
    """Whether ``got`` (decoded SSE) is ``want`` with some ``None`` object members
    left out (the reference omits optional nulls; which ones is the unit tests' job)."""
    work = [(got, want)]
    while work:
        g, w = work.pop()
        if type(w) is dict:
            if type(g) is not dict or any(k not in w for k in g):
                return False
            if any(w[k] is not None for k in w if k not in g):
                return False
            work.extend((g[k], w[k]) for k in g)
        elif type(w) is list:
            if type(g) is not list or len(g) != len(w):
                return False
            work.extend(zip(g, w, strict=True))
        elif not same_json(g, w):
            return False
    return True


def round_trip(transport: str, data: bytes, twin: Any) -> None:
    if transport == "proto":
        back = proto_reader.decode_payload(data[4:])
        assert same_json(back, normalize(twin)), f"proto round trip is not normalize: {back!r}"
    else:
        (back,) = decode(data, SSE, max_event_size=len(data))
        assert sse_keeps(back, twin), f"SSE round trip lost more than optional nulls: {back!r}"


def check(event: Any, twin: Any, ambiguous: bool) -> None:
    results: dict[str, tuple[Any, ...]] = {}
    for name, fn in PURE.items():
        want = results[name] = result(fn, event)
        for backend, encoders in BACKENDS[1:]:
            got = result(encoders[name], event)
            assert got == want, f"{name}: pure {show(want)}\n  {backend} {show(got)}"
        transport = name.split()[0]
        if name != transport:  # encode_many([e]) is encode(e)
            assert want == results[transport], f"{name}: {show(want)}, one: {show(results[name])}"
        elif not ambiguous:
            plain = result(fn, twin)
            # a message may name the Python type where JSON has none ("got UserDict")
            assert same_place(plain, want), f"{name}: graph {show(want)}\n  twin {show(plain)}"
            if want[0] == "ok":
                round_trip(transport, want[1], twin)


def sdk_model(event: Any, twin: Any) -> Any:
    """The SDK's pydantic object for the event, or ``None`` when it will not make one."""
    from pydantic import TypeAdapter

    global _ADAPTER
    if _ADAPTER is None:
        from ag_ui.core import Event

        _ADAPTER = TypeAdapter(Event)
    for candidate in (event, twin):  # the SDK keeps odd values in its Any fields
        try:
            return _ADAPTER.validate_python(candidate)
        except Exception:  # the SDK's refusal (or its own failure): not under test
            continue
    return None


_ADAPTER: Any = None


def check_sdk(model: Any) -> None:
    from ag_ui.encoder import EventEncoder as SDKEncoder

    # An iterator in an Any field is used up by the first dump (as by the SDK's own
    # encoder, test_an_sdk_object_holding_an_iterator_encodes_as_the_sdk_does): one
    # dump first, so that every encoder below sees what is left
    with contextlib.suppress(Exception):
        as_event_dict(model)
    outs = []
    for backend, encoders in BACKENDS:
        for name in ("sse", "proto"):
            fn = encoders[name]
            outs.append((backend, name, result(fn, model)))
            assert result(encoders[f"{name} many"], model) == outs[-1][2], (backend, name)
    for backend, name, r in outs:
        same = next(o for b, n, o in outs if n == name)
        assert r == same, f"SDK object, {name}: {show(same)}\n  {backend} {show(r)}"
    sse = outs[0][2]
    try:
        theirs = SDKEncoder().encode(model).encode()
    except Exception:  # the SDK cannot write it either
        return
    if sse[0] == "ok":
        assert same_json(decode(sse[1], SSE), decode(theirs, SSE)), "SDK object: not as the SDK"


def test_one_input(data: bytes) -> None:
    b = Builder(data)
    mode = b.byte()
    base = CORPUS[b.u16() % len(CORPUS)]
    event, twin = b.build(base)
    # an event that is no mapping is refused naming its Python type, the twin's differs
    check(event, twin, b.ambiguous or not isinstance(event, Mapping))
    if mode & 1 and not b.deep:  # pydantic recurses (and reprs) deep values
        model = sdk_model(event, twin)
        if model is not None:
            check_sdk(model)


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
