"""The drill's checks, run in a subprocess on an evolved scratch tree.

    python tests/evolution/_probe.py drill THING...   (AGUI_WIRE_REQUIRE_FAST=1 or AGUI_WIRE_PURE=1)
    python tests/evolution/_probe.py loud | schema

``PYTHONPATH`` puts the scratch ``src`` first, so ``agui_wire`` (its generated
``_pb``, ``schema`` and ``_fast``) is the evolved one; prints one JSON object.
Every check is caught and reported, never raised: the tests in this folder assert
on the report, one test per (thing, property).

drill: per thing, on the backend the environment selects (``selected.NAME``),
through the public entry points and ``EventEncoder``, with ``extra_keys="error"``
(a new key must be a known key): ``encode`` (the new data is on the wire, read
back by protobuf's parser), ``decode`` (bytes that carry it decode to the
input), ``sse`` (written and decoded back to the input); besides, on the Cython
run, the same for upb (``event_to_proto``/``event_from_proto``), ``validate``
(no error), ``normalize`` (leaves the input, already in decoded form, as it is)
and ``c_path`` (the extension handed nothing to the pure twins: fallback
counters unchanged). Bytes are reported in hex for the cross-backend comparison.
"""

from __future__ import annotations

import json
import sys
import traceback
import warnings
from collections.abc import Callable
from typing import Any

import evolve  # beside this file (sys.path[0])


def _err(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _check(fn: Callable[[], Any]) -> dict[str, Any]:
    """{"ok": bool, "detail": str, ...} of ``fn``, which returns (ok, detail[, extra])."""
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ok, detail, *extra = fn()
    except Exception as exc:
        return {"ok": False, "detail": _err(exc)}
    out: dict[str, Any] = {"ok": ok and not caught, "detail": detail}
    if caught:
        out["detail"] = f"{detail}; warned: " + "; ".join(
            f"{w.category.__name__}: {w.message}" for w in caught
        )
    if extra:
        out["hex"] = extra[0]
    return out


def _same(got: Any, want: Any) -> tuple[bool, str]:
    return (True, "equal") if got == want else (False, f"got {got!r}, want {want!r}")


def drill(names: list[str]) -> dict[str, Any]:
    import agui_wire
    from agui_wire import validate
    from agui_wire._codec import selected, upb
    from agui_wire._pb import events_pb2

    mode = selected.NAME
    report: dict[str, Any] = {"backend": mode, "file": agui_wire.__file__, "things": {}}
    fast: Any = None
    if mode == "cython":
        from agui_wire import _fast as fast
    else:
        try:  # why the extension is not in use (AGUI_WIRE_PURE=1, or it failed)
            import agui_wire._fast
        except ImportError as exc:
            report["fast_error"] = _err(exc)

    def counters() -> tuple[int, int, int]:
        return (fast._encoder_fallbacks(), fast._decoder_fallbacks(), fast._sse_fallbacks())

    proto_encoder = agui_wire.EventEncoder(agui_wire.PROTO_MEDIA_TYPE, extra_keys="error")
    sse_encoder = agui_wire.EventEncoder(agui_wire.SSE_MEDIA_TYPE)
    for name in names:
        thing = evolve.THINGS[name]
        event = thing.event
        out: dict[str, Any] = {}
        report["things"][name] = out
        before = counters() if fast is not None else None

        def wire(payload: bytes, thing: evolve.Thing = thing) -> tuple[bool, str]:
            got = thing.wire(events_pb2.Event.FromString(payload))
            if got == thing.expected:
                return True, "on the wire"
            return False, f"on the wire: {got!r}, want {thing.expected!r}"

        def encode(event: Any = event, wire: Any = wire) -> tuple[bool, str, str]:
            frame = agui_wire.encode_proto(event, extra_keys="error")
            ok, detail = wire(frame[4:])
            if ok and agui_wire.encode_proto(event) != frame:
                ok, detail = False, "extra_keys='drop' writes other bytes than 'error'"
            if ok and proto_encoder.encode(event) != frame:
                ok, detail = False, "EventEncoder (FrameEncoder) writes other bytes"
            return ok, detail, frame[4:].hex()

        out["encode"] = _check(encode)

        def encode_upb(event: Any = event, wire: Any = wire) -> tuple[bool, str, str]:
            payload = upb.event_to_proto(event, extra_keys="error").SerializeToString(
                deterministic=True
            )
            ok, detail = wire(payload)
            return ok, detail, payload.hex()

        if mode == "cython":
            out["encode_upb"] = _check(encode_upb)
        # decoders read bytes that carry the new data: upb's if they do, else ours
        good = None
        for key in ("encode_upb", "encode"):
            if out.get(key, {}).get("ok"):
                good = bytes.fromhex(out[key]["hex"])
                break

        def decode(event: Any = event, good: Any = good) -> tuple[bool, str]:
            if good is None:
                return False, "no backend wrote the bytes to decode"
            return _same(agui_wire.decode_proto(len(good).to_bytes(4, "big") + good), [event])

        def decode_upb(event: Any = event, good: Any = good) -> tuple[bool, str]:
            if good is None:
                return False, "no backend wrote the bytes to decode"
            return _same(upb.event_from_proto(events_pb2.Event.FromString(good)), event)

        def sse(event: Any = event) -> tuple[bool, str, str]:
            data = agui_wire.encode_sse(event)
            ok, detail = _same(agui_wire.decode(data), [event])
            if ok and sse_encoder.encode(event) != data:
                ok, detail = False, "EventEncoder (SSEEncoder) writes other bytes"
            return ok, detail, data.hex()

        out["decode"] = _check(decode)
        out["sse"] = _check(sse)
        if mode == "cython":
            out["decode_upb"] = _check(decode_upb)

            def valid(event: Any = event) -> tuple[bool, str]:
                # errors only: a note names a key @ag-ui/core 1.0.0's (loose) zod
                # shapes do not, which a field newer than 1.0 is
                problems = validate.validate_event(event)
                errors = [str(p) for p in problems if p.severity == "error"]
                return not errors, "; ".join(errors) or f"no error ({len(problems)} notes)"

            out["validate"] = _check(valid)
            out["normalize"] = _check(lambda event=event: _same(agui_wire.normalize(event), event))
        if fast is not None:
            delta = [b - a for a, b in zip(before, counters(), strict=True)]  # type: ignore[arg-type]
            out["c_path"] = {
                "ok": delta == [0, 0, 0],
                "detail": f"fallbacks (encoder, decoder, sse) during the checks: {delta}",
            }
    return report


def loud() -> dict[str, Any]:
    """A field the C tables cannot hold: how ``import agui_wire`` and
    ``import agui_wire._fast`` say so, and whether the pure twins still carry it."""
    report: dict[str, Any] = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import agui_wire

        agui_wire.encode_proto  # noqa: B018  (a lazy name: loads the backend)
        from agui_wire._codec import selected
    report["backend"] = selected.NAME
    report["warnings"] = [
        {
            "category": w.category.__name__,
            "runtime": issubclass(w.category, RuntimeWarning),
            "message": str(w.message),
        }
        for w in caught
    ]
    try:
        import agui_wire._fast
    except ImportError as exc:
        report["fast_import"] = _err(exc)
    else:
        report["fast_import"] = None
    from agui_wire._codec import proto_reader, proto_writer

    def pure() -> tuple[bool, str]:
        payload = proto_writer.encode_payload(evolve.FAR_EVENT, extra_keys="error")
        return _same(proto_reader.decode_payload(payload), evolve.FAR_EVENT)

    report["pure"] = _check(pure)
    return report


def schema() -> dict[str, Any]:
    """How ``import agui_wire.schema`` refuses a shape no codec has code for."""
    try:
        import agui_wire.schema  # noqa: F401
    except Exception as exc:
        return {"schema_import": _err(exc)}
    return {"schema_import": None}


def main() -> None:
    probes = {"loud": loud, "schema": schema}
    try:
        report = probes[sys.argv[1]]() if sys.argv[1] in probes else drill(sys.argv[2:])
    except BaseException as exc:  # an import that fails: every check of the run fails
        report = {"error": _err(exc), "traceback": traceback.format_exc(limit=-3)}
    json.dump(report, sys.stdout)


if __name__ == "__main__":
    main()
