"""The numbers of ``agui-wire cost``: what ``cost.py`` measures and ``report.py`` draws.

Strategy: two plain dataclasses, below both modules, so the measuring side and the
HTML side share them without knowing each other (``asdict`` gives ``--json``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .. import __version__

__all__ = ["CostReport", "TransportCost"]


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
    text_bytes: int  # UTF-8 bytes of every `delta` string: the text itself
    transports: list[TransportCost]
    whole_gzip: dict[str, int]  # whole-response gzip bytes (no per-event flush)
    gzip_level: int
    repeats: int
    machine: dict[str, str]
    implementation: dict[str, str]
    skipped: int = 0
    verdict: dict[str, Any] = field(default_factory=dict)
    #: server's CPU to write the stream to a loopback TCP socket, µs per event:
    #: {"sse"/"proto": {"per_event": .., "coalesced": ..}}
    send_us: dict[str, dict[str, float]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)  # codings not installed

    def transport(self, key: str) -> TransportCost:
        return next(t for t in self.transports if t.key == key)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["agui_wire"] = __version__
        return data
