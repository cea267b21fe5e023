"""The options every backend of the run store takes, checked once, and the timing
derived from them.

Contract: ``Options`` raises ``ValueError`` naming the bad option and otherwise
holds plain values that nothing changes. ``poll`` is how often a quiet run's
lease is looked at: ``min(1 s, lease / 4)``, so a run whose producer vanished
ends within ``lease + poll``.
"""

from __future__ import annotations

import math


class Options:
    """A store's checked options (see ``RunStore`` for each)."""

    __slots__ = ("backlog", "batch", "lease", "maxlen", "page_bytes", "poll", "ttl")

    def __init__(
        self,
        *,
        ttl: float,
        lease: float,
        maxlen: int | None,
        batch: int,
        backlog: int,
        page_bytes: int,
    ) -> None:
        self.ttl = check_seconds("ttl", ttl)
        self.lease = check_seconds("lease", lease)
        self.maxlen = (
            None if maxlen is None else check_count("maxlen", maxlen, "a positive int or None")
        )
        self.batch = check_count("batch", batch, "a positive int")
        self.backlog = check_count("backlog", backlog, "a positive int")
        self.page_bytes = check_count("page_bytes", page_bytes, "a positive int")
        # seconds between lease checks of a quiet run
        self.poll = min(1.0, self.lease / 4)


def check_seconds(name: str, value: object) -> float:
    """``value`` as a positive number of seconds, else ``ValueError`` naming ``name``."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not 0 < value < math.inf  # (NaN fails it too)
    ):
        raise ValueError(f"{name} must be a positive, finite number of seconds, not {value!r}")
    return float(value)


def check_count(name: str, value: object, rule: str) -> int:
    """``value`` as a positive int, else ``ValueError`` saying ``rule``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be {rule}, not {value!r}")
    return value
