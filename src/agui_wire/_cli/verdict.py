"""The ``agui-wire cost`` verdict in plain words: which transport is smaller, by how
much, and why.

Strategy: computed from a measured ``CostReport`` only (no timing here). The
headline compares protobuf with SSE uncompressed and with gzip (flushed per
event) and always says which one is larger: "45% smaller than SSE", "111%
larger than SSE (211% of its bytes)". The reasons then say, in order: what was
left out of the figures and the share of the input's bytes it held; the event
types on which protobuf is larger and why (their JSON values travel as
``google.protobuf.Value``/``Struct``: a tag and a length on every key, value
and nested object, eight bytes for every number, where JSON has quotes and
commas); bytes per million events; what the most frequent type carries (its
text, its JSON values, or only its envelope); CPU; the other codings; the cost
of a socket write; when to choose which.

How sure: under ``MIN_EVENTS`` events (``_confidence`` gives the reason) the
headline says the sample is too small to judge and gives the figures as what
they are, these events' bytes; above it, when the 95% interval of a ratio
reaches another headline's ground (another verdict, or the other side of "the
same size"), the headline says the events do not settle it and how far the
ratio could go. Either way a reason says how to measure more.

Contract: ``verdict(report)`` returns ``worth_it`` (``yes``, ``somewhat``,
``only-uncompressed``, ``no``, or ``too-few`` under ``MIN_EVENTS`` events),
``settled`` (False when too few or the intervals reach another verdict),
``intervals`` (the report's), ``headline``, ``reasons`` (sentences),
``ratio_uncompressed`` / ``ratio_gzip`` (protobuf bytes / SSE bytes),
``saving_uncompressed`` / ``saving_gzip`` (1 - ratio: negative when protobuf is
larger), ``protobuf_larger`` ({"uncompressed"/"gzip": [event types]}) and
``smallest`` (the smallest transport's key). It cites nothing the installed
package lacks.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Final

from ._confidence import MIN_EVENTS
from ._costmodel import CODING_LABELS, CostReport

__all__ = ["verdict"]

#: Ratios this close to 1 are "the same size": whole percents (as every other figure
#: is said) would round them to 0% or 1%, and an event type this close is not "larger".
SAME: Final = 0.005
_WITHIN: Final = (0.001, 0.002, 0.005)  # "within 0.1%": the smallest of these that holds
_LOSSY: Final = "does not fit a double exactly"  # the library's reason for integers > 2^53


def _pct(x: float) -> str:
    return f"{abs(x) * 100:.0f}%"


def _within(ratio: float) -> str:
    """'0.1%': the smallest of ``_WITHIN`` that ``ratio`` is within of 1."""
    bound = next((b for b in _WITHIN if abs(ratio - 1) <= b), SAME)
    return f"{bound * 100:.1f}%"


def versus(ratio: float, than: str = " than SSE") -> str:
    """protobuf against SSE: '45% smaller than SSE', '111% larger than SSE (211% of its
    bytes)' or 'the same size as SSE (within 0.1%)'."""
    if abs(ratio - 1) < SAME:
        same = "the same size as SSE" if than else "the same size"
        return f"{same} (within {_within(ratio)})"
    if ratio < 1:
        return f"{_pct(1 - ratio)} smaller{than}"
    of = f" ({ratio:.0%} of its bytes)" if ratio >= 1.5 and than else ""
    return f"{_pct(ratio - 1)} larger{than}{of}"


def _speed(ours: float, theirs: float) -> str:
    """'2.1x faster than SSE', '1.4x slower than SSE' or 'about as fast as SSE'."""
    if ours <= 0 or theirs <= 0 or max(ours, theirs) / min(ours, theirs) < 1.1:
        return "about as fast as SSE"
    if ours < theirs:
        return f"{theirs / ours:.1f}x faster than SSE"
    return f"{ours / theirs:.1f}x slower than SSE"


def _per_million(bytes_: int, events: int) -> str:
    return f"{bytes_ / events * 1e6 / 1e6:,.1f} MB"


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _headline(plain: float, gz: float) -> tuple[str, str]:
    if gz <= 0.70:
        return "yes", (
            f"Yes: binary is worth it for this traffic. Even with gzip on both, protobuf is "
            f"{versus(gz)}; uncompressed, {versus(plain, '')}."
        )
    if gz <= 0.90:
        return "somewhat", (
            f"Somewhat: with gzip on both, protobuf is {versus(gz)}; uncompressed, it is "
            f"{versus(plain, '')}."
        )
    if plain <= 0.75:
        return "only-uncompressed", (
            f"Not for size, if you compress: protobuf is {versus(plain)} uncompressed, but "
            f"with gzip on both it is {versus(gz, '')}. Binary pays off only where the stream "
            "cannot be compressed."
        )
    if plain > 1 and gz > 1:
        return "no", (
            f"No: protobuf is larger than SSE for this traffic: {versus(plain, '')} "
            f"uncompressed ({plain:.0%} of SSE's bytes) and {versus(gz, '')} with gzip "
            f"({gz:.0%})."
        )
    return "no", (
        f"No: for this traffic protobuf is {versus(plain)} uncompressed and "
        f"{versus(gz, '')} with gzip."
    )


def _sign(ratio: float) -> int:
    """-1 smaller, 0 the same size (within ``SAME``), 1 larger."""
    return 0 if abs(ratio - 1) < SAME else (1 if ratio > 1 else -1)


def _range(low: float, high: float) -> str:
    return f"from {versus(low, '')} to {versus(high, '')}"


def _unsettled(report: CostReport, plain: float, gz: float) -> str | None:
    """A sentence when a ratio's 95% interval (``_confidence``) reaches another verdict,
    or from smaller to larger: the events do not settle it. Each verdict holds over a
    box of (plain, gzip) ratios, so an interval's two ends decide."""
    if set(report.intervals) != {"uncompressed", "gzip"}:
        return None
    here = _headline(plain, gz)[0]
    ranges = []
    for name, ends, verdicts in (
        (
            "with gzip",
            report.intervals["gzip"],
            [_headline(plain, g)[0] for g in report.intervals["gzip"]],
        ),
        (
            "uncompressed",
            report.intervals["uncompressed"],
            [_headline(p, gz)[0] for p in report.intervals["uncompressed"]],
        ),
    ):
        low, high = ends
        if set(verdicts) != {here} or {_sign(low), _sign(high)} >= {-1, 1}:
            ranges.append(f"{_range(low, high)} {name}")
    if not ranges:
        return None
    return (
        f"But {report.events:,} events do not settle it: on more traffic like this protobuf "
        f"could be {_and(ranges)} (95% intervals)."
    )


def _larger_types(report: CostReport, sse_key: str, proto_key: str) -> list[tuple[str, int]]:
    """(type, bytes protobuf spends over SSE) where protobuf is larger by more than
    ``SAME`` of the type's SSE bytes (closer is the same size, as in the headline),
    largest first."""
    sse, proto = report.transport(sse_key).by_type, report.transport(proto_key).by_type
    over = [(t, proto.get(t, 0) - sse.get(t, 0), sse.get(t, 0)) for t in report.counts]
    return sorted(((t, b) for t, b, base in over if b > SAME * base), key=lambda x: -x[1])


def _json_fields(report: CostReport, etype: str) -> list[str]:
    fields: dict[str, int] = report.carried.get(etype, {}).get("json_fields", {})
    return [name for name, _ in sorted(fields.items(), key=lambda x: -x[1])[:3]]


def _why_larger(report: CostReport) -> list[str]:
    """The types on which protobuf is larger, and why."""
    plain = _larger_types(report, "sse", "proto")
    gz = _larger_types(report, "sse+gzip", "proto+gzip")
    if not plain and not gz:
        return []
    out = []
    sse, proto = report.transport("sse"), report.transport("proto")
    if plain:
        named = []
        for etype, extra in plain[:4]:
            count = report.counts[etype]
            fields = _json_fields(report, etype)
            carries = f", carrying {', '.join(fields)}" if fields else ""
            named.append(
                f"{etype} ({count:,} event(s){carries}: {proto.by_type[etype] / count:,.0f} vs "
                f"{sse.by_type.get(etype, 0) / count:,.0f} bytes each, +{extra:,} in all)"
            )
        with_values = [t for t, _ in plain if _json_fields(report, t)]
        why = (
            "their JSON values travel as google.protobuf.Value/Struct, which spends a tag and "
            "a length on every key, every value and every nested object, and eight bytes on "
            "every number, where JSON has quotes, colons and commas"
            if with_values
            else "the fields protobuf writes with a tag and a length each outweigh what it "
            "saves on keys here"
        )
        out.append(f"Protobuf is larger on {_and(named)}: {why}.")
    if gz:
        names = _and([t for t, _ in gz[:5]])
        values = any(_json_fields(report, t) for t, _ in gz[:5])
        wrapped = ", and Value/Struct's wrapping of each JSON value," if values else ""
        out.append(
            f"With gzip, protobuf is larger on {names}: once gzip has seen SSE's keys and type "
            f"names they cost a few bits each, while protobuf's tags and lengths{wrapped} vary "
            "from event to event and compress less."
        )
    return out


def _left_out(report: CostReport) -> list[str]:
    if not report.left_out:
        return []
    k, n = report.skipped, report.events
    reasons = Counter(str(s.get("reason", "")) for s in report.left_out)
    types = Counter(str(s.get("type") or "undecodable") for s in report.left_out)
    kinds = _and([f"{t} x{c}" if c > 1 else t for t, c in types.most_common(4)])
    share = ""
    if report.input_bytes:
        share = f", {report.left_out_bytes / report.input_bytes:.0%} of the input's bytes"
    text = (
        f"Left out of every figure here: {k:,} of {k + n:,} events ({kinds}{share}): "
        f"{reasons.most_common(1)[0][0]}"
        + (f" (and {len(reasons) - 1} other reason(s))" if len(reasons) > 1 else "")
        + f". The figures are for the other {n:,}."
    )
    if any(_LOSSY in r for r in reasons) and not report.lossy_numbers:
        text += (
            " --lossy-numbers keeps them, rounding integers beyond 2^53 into protobuf doubles "
            "as a JavaScript client reads them."
        )
    return [text]


def _top_type(report: CostReport) -> str:
    """What the most frequent event type carries: text, JSON values, or only envelope."""
    sse, proto = report.transport("sse"), report.transport("proto")
    top, count = next(iter(report.counts.items()))
    sse_each = sse.by_type.get(top, 0) / count
    head = (
        f"{top} is {_pct(count / report.events)} of the events: {sse_each:,.0f} bytes each in "
        f"SSE, {proto.by_type.get(top, 0) / count:,.0f} in protobuf."
    )
    row = report.carried.get(top, {})
    text, json_bytes = row.get("text", 0) / count, row.get("json", 0) / count
    patch = row.get("patch", 0) / count
    parts = []
    if text:
        parts.append(
            f"its text is {text:,.0f} bytes per event ({text / sse_each:.0%} of its SSE bytes)"
        )
    if json_bytes:
        fields = ", ".join(_json_fields(report, top))
        parts.append(
            f"its JSON values ({fields}) are {json_bytes:,.0f} bytes per event as JSON "
            f"({json_bytes / sse_each:.0%}), carried in protobuf as google.protobuf.Value"
        )
    if patch:
        parts.append(
            f"its JSON Patch operations name {patch:,.0f} bytes of op and path per event "
            f"({patch / sse_each:.0%}), an enum and a string each in protobuf"
        )
    if parts:
        rest = 1 - (text + json_bytes + patch) / sse_each
        tail = f"; the other {_pct(max(rest, 0))} is envelope (type, ids, JSON syntax)."
        body = " ".join(
            [head, parts[0][0].upper() + parts[0][1:]] + [f"and {p}" for p in parts[1:]]
        )
        return body + tail
    return head + (
        " It carries no text, no JSON value and no JSON Patch: all of it is envelope (type, ids)."
    )


def verdict(report: CostReport) -> dict[str, Any]:
    """Plain-words verdict from the measured figures (see the module doc)."""
    sse, proto = report.transport("sse"), report.transport("proto")
    sse_gz, proto_gz = report.transport("sse+gzip"), report.transport("proto+gzip")
    n = report.events
    plain = proto.bytes / sse.bytes
    gz = proto_gz.bytes / sse_gz.bytes
    worth, headline = _headline(plain, gz)
    settled = True
    if n < MIN_EVENTS:
        worth, settled = "too-few", False
        headline = (
            f"Too few events to judge: {n:,} (at least {MIN_EVENTS} are needed, a whole run or "
            f"several are better). On these {n:,}, protobuf is {versus(plain)} uncompressed and "
            f"{versus(gz, '')} with gzip."
        )
    elif (open_ := _unsettled(report, plain, gz)) is not None:
        settled = False
        headline += " " + open_
    if report.left_out:
        share = ""
        if report.input_bytes:
            share = f", {report.left_out_bytes / report.input_bytes:.0%} of the input's bytes,"
        headline += f" ({report.skipped:,} event(s){share} left out: see below.)"
    reasons = _left_out(report)
    if not settled:
        reasons.append(
            "To judge your traffic, measure more of it: `agui-wire record URL -o run.sse` keeps "
            "a whole run, and `agui-wire cost` takes several captures at once."
        )
    reasons += _why_larger(report)
    reasons.append(
        f"Per million events: SSE {_per_million(sse.bytes, n)}, protobuf "
        f"{_per_million(proto.bytes, n)}; with gzip (flushed per event, as streaming needs) "
        f"SSE {_per_million(sse_gz.bytes, n)}, protobuf {_per_million(proto_gz.bytes, n)}."
    )
    whole_s, whole_p = report.whole_gzip["sse"], report.whole_gzip["proto"]
    buffering = (
        "flushing after every event costs compression: buffering the whole response would "
        f"give SSE {whole_s:,} and protobuf {whole_p:,} bytes (vs {sse_gz.bytes:,} / "
        f"{proto_gz.bytes:,} streamed)."
    )
    if gz > plain:
        effect = (
            "widens protobuf's deficit"
            if plain >= 1
            else "turns protobuf's lead into a deficit"
            if gz > 1
            else "narrows protobuf's lead"
        )
        reasons.append(
            "gzip finds the repeated JSON keys, type names and ids that protobuf removes, "
            f"which is why compression {effect}; " + buffering
        )
    else:
        reasons.append("gzip shrinks both; " + buffering)
    if report.counts:
        reasons.append(_top_type(report))
    enc_sse, enc_proto = sse_gz.encode_us, proto_gz.encode_us
    dec_sse, dec_proto = sse_gz.decode_us, proto_gz.decode_us
    cpu = (
        f"CPU on this machine, per event with gzip: protobuf encodes {_speed(enc_proto, enc_sse)}"
        f" ({enc_proto:.2f} vs {enc_sse:.2f} µs) and decodes "
        f"{_speed(dec_proto, dec_sse)} ({dec_proto:.2f} vs {dec_sse:.2f} µs); uncompressed, "
        f"{proto.encode_us:.2f} vs {sse.encode_us:.2f} µs to encode and {proto.decode_us:.2f} vs "
        f"{sse.decode_us:.2f} µs to decode."
    )
    if report.implementation.get("decode_payload") == "python":
        cpu += (
            " (This build decodes protobuf in pure Python; with the compiled extension it is "
            "faster.)"
        )
    reasons.append(cpu)
    reasons += _coding_reasons(report)
    if report.send_us:
        send_s, send_p = report.send_us["sse"], report.send_us["proto"]
        reasons.append(
            "Writing costs more than encoding: one socket send per event takes "
            f"{send_s['per_event']:.2f} µs (SSE) / {send_p['per_event']:.2f} µs (protobuf) of "
            f"server CPU here, against {sse.encode_us:.2f} / {proto.encode_us:.2f} µs to encode; "
            f"coalesced writes (as EventStreamResponse makes them) cost {send_s['coalesced']:.2f}"
            f" / {send_p['coalesced']:.2f} µs. An ASGI server adds its own cost to every send "
            "(several µs), so coalescing matters more than the transport."
        )
    if gz > 1:
        reasons.append(
            "For this traffic SSE with gzip is the smaller stream, and it is readable in any "
            "browser's devtools; choose protobuf only for typed frames or where JSON parsing "
            "CPU matters more than bytes."
        )
    elif worth in ("only-uncompressed", "no"):
        reasons.append(
            "Choose protobuf when the path cannot compress (some proxies and mobile stacks "
            "strip it), when CPU for JSON parsing matters more than bytes, or for typed "
            "frames; otherwise SSE with gzip costs about the same on the wire and is readable "
            "in any browser's devtools."
        )
    else:
        reasons.append(
            "Binary frames are opaque in browser devtools: keep `agui-wire decode` at hand "
            "for captures."
        )
    best = min(report.transports, key=lambda t: t.bytes)
    return {
        "worth_it": worth,
        "settled": settled,
        "intervals": report.intervals,
        "headline": headline,
        "reasons": reasons,
        "ratio_uncompressed": round(plain, 4),
        "ratio_gzip": round(gz, 4),
        "saving_uncompressed": round(1 - plain, 4),
        "saving_gzip": round(1 - gz, 4),
        "protobuf_larger": {
            "uncompressed": [t for t, _ in _larger_types(report, "sse", "proto")],
            "gzip": [t for t, _ in _larger_types(report, "sse+gzip", "proto+gzip")],
        },
        "smallest": best.key,
    }


def _coding_reasons(report: CostReport) -> list[str]:
    """Brotli and zstd beside gzip: bytes and encode CPU, SSE and protobuf."""
    out = []
    keys = {t.key for t in report.transports}
    n = report.events
    gz_s, gz_p = report.transport("sse+gzip"), report.transport("proto+gzip")
    for coding in ("br", "zstd"):
        if f"sse+{coding}" not in keys:
            continue
        s, p = report.transport(f"sse+{coding}"), report.transport(f"proto+{coding}")
        out.append(
            f"{CODING_LABELS[coding]} (flushed per event): SSE {_per_million(s.bytes, n)}, "
            f"protobuf {_per_million(p.bytes, n)} per million events ({s.bytes / gz_s.bytes:.0%}"
            f" / {p.bytes / gz_p.bytes:.0%} of gzip's), encoding at {s.encode_us:.2f} / "
            f"{p.encode_us:.2f} µs per event (gzip {gz_s.encode_us:.2f} / {gz_p.encode_us:.2f})."
        )
    if report.missing:
        names = " and ".join(CODING_LABELS[c] for c in report.missing)
        extras = ",".join("brotli" if c == "br" else "zstd" for c in report.missing)
        out.append(f"{names} not measured: not installed here (pip install 'agui-wire[{extras}]').")
    return out
