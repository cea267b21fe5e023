"""The numbers of ``agui-wire cost``: what ``cost_measure`` measures, ``verdict`` puts in
words, and ``cost`` (the table) and ``report`` (the HTML page) show.

Strategy: plain dataclasses and the list of transports, below every one of those
modules, so the measuring side and the showing sides share them without knowing
each other (``asdict`` gives ``--json``).

Contract: ``TRANSPORTS`` is (key, label) per transport measured: ``sse`` and
``proto``, then ``sse+CODING`` / ``proto+CODING`` for gzip and for Brotli and
zstd where installed; a key splits into (base, coding) with ``split_key``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Final

from .. import __version__
from .._compression import BROTLI_QUALITY, ZSTD_LEVEL, available

__all__ = [
    "COALESCE_BYTES",
    "CODING_LABELS",
    "TRANSPORTS",
    "CostReport",
    "TransportCost",
    "split_key",
]

CODING_LABELS: Final = {"gzip": "gzip", "br": "Brotli", "zstd": "zstd"}


def _transports() -> tuple[tuple[str, str], ...]:
    """(key, label) per transport measured: plain, then gzip, Brotli and zstd where
    installed (each coding once for SSE, once for protobuf)."""
    out = [("sse", "SSE"), ("proto", "protobuf")]
    for coding in sorted(available(), key=("gzip", "br", "zstd").index):
        label = CODING_LABELS[coding]
        out += [(f"sse+{coding}", f"SSE + {label}"), (f"proto+{coding}", f"protobuf + {label}")]
    return tuple(out)


TRANSPORTS: Final = _transports()
COALESCE_BYTES: Final = 32 * 1024  # what EventStreamResponse puts in one send, at most


def split_key(key: str) -> tuple[str, str | None]:
    """'proto+br' -> ('proto', 'br'); 'sse' -> ('sse', None)."""
    base, _, coding = key.partition("+")
    return base, coding or None


@dataclass
class TransportCost:
    key: str
    label: str
    bytes: int
    encode_us: float  # median CPU per event, microseconds
    decode_us: float
    by_type: dict[str, int]  # bytes per event type
    encode_runs_us: list[float] = field(default_factory=list)  # every pass, per event
    decode_runs_us: list[float] = field(default_factory=list)


@dataclass
class CostReport:
    source: str  # what the events are
    events: int
    counts: dict[str, int]  # events per type
    text_bytes: int  # UTF-8 bytes of every `delta` / `content` string: the text itself
    transports: list[TransportCost]
    whole_gzip: dict[str, int]  # whole-response gzip bytes (no per-event flush)
    gzip_level: int
    repeats: int
    machine: dict[str, str]
    implementation: dict[str, str]
    #: per event type: {"text": UTF-8 bytes of its text, "json": compact-JSON bytes of
    #: its JSON values (google.protobuf.Value/Struct on the wire), "json_fields":
    #: those bytes by field path, "patch": UTF-8 bytes of its JSON Patch operations'
    #: op, path and from}
    carried: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: the events left out (not encodable in both transports, or not decodable), each
    #: {"input", "index", "offset", "type", "reason", "size", "unit"}
    left_out: list[dict[str, Any]] = field(default_factory=list)
    input_bytes: int = 0  # bytes of the captures read (0: the sample run)
    lossy_numbers: bool = False  # integers beyond 2^53 rounded into protobuf doubles
    verdict: dict[str, Any] = field(default_factory=dict)
    #: server's CPU to write the stream to a loopback TCP socket, µs per event:
    #: {"sse"/"proto": {"per_event": .., "coalesced": ..}}
    send_us: dict[str, dict[str, float]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)  # codings not installed
    #: the 95% interval of protobuf bytes / SSE bytes for more traffic like this
    #: (``_confidence``): {"uncompressed"/"gzip": [low, high]}; empty for too few events
    intervals: dict[str, list[float]] = field(default_factory=dict)

    @property
    def skipped(self) -> int:
        return len(self.left_out)

    @property
    def left_out_bytes(self) -> int:
        return sum(s.get("size") or 0 for s in self.left_out)

    def counted(self) -> str:
        """'309 events', or '300 of 309 events (9 left out)'."""
        if not self.left_out:
            return f"{self.events:,} events"
        total = self.events + self.skipped
        return f"{self.events:,} of {total:,} events ({self.skipped:,} left out)"

    def levels(self) -> str:
        """'gzip level 6, Brotli quality 5, zstd level 3': the codings measured only."""
        keys = {t.key for t in self.transports}
        text = f"gzip level {self.gzip_level}"
        if "sse+br" in keys:
            text += f", Brotli quality {BROTLI_QUALITY}"
        if "sse+zstd" in keys:
            text += f", zstd level {ZSTD_LEVEL}"
        return text

    def transport(self, key: str) -> TransportCost:
        return next(t for t in self.transports if t.key == key)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["agui_wire"] = __version__
        return data
