"""Redis unreachable, logged once per outage rather than once per call.

Strategy: whoever meets ``StoreUnavailable`` first in the store (a call out of
retries, a tail lane, the watchdog stopping a producer) reports it
(``unavailable``) and every reply reports that Redis answers (``answered``, a
flag test while all is well). The first report of an outage is logged at ERROR
with what the connection said (host, port, errno: what HTTP clients are never
told), the next ones at DEBUG; the first reply after it at WARNING, with how long
the outage lasted and how many calls failed meanwhile.

Contract: logs on ``agui_wire.redis``; never raises.
"""

from __future__ import annotations

import logging
import time

from ..errors import StoreUnavailable

logger = logging.getLogger("agui_wire.redis")


class Outage:
    """One store's view of whether Redis answers (see the module doc)."""

    __slots__ = ("failed", "since")

    def __init__(self) -> None:
        self.since: float | None = None  # monotonic time the outage was first met
        self.failed = 0  # StoreUnavailable raised since

    def unavailable(self, error: StoreUnavailable) -> None:
        self.failed += 1
        if self.since is None:
            self.since = time.monotonic()
            logger.error(
                "Redis is unavailable: %s (the store's calls fail with StoreUnavailable, "
                "HTTP 503, until it answers; logged once per outage)",
                error.reason,
            )
        else:
            logger.debug("Redis still unavailable: %s", error)

    def answered(self) -> None:
        if self.since is not None:
            logger.warning(
                "Redis answers again after %.1f s (%d calls failed with StoreUnavailable)",
                time.monotonic() - self.since,
                self.failed,
            )
            self.since = None
            self.failed = 0
