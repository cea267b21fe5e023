"""How far a byte ratio measured on one capture holds for more of the same traffic.

Strategy: ``agui-wire cost`` divides protobuf's bytes by SSE's over the events it
was given, R = sum(p) / sum(s). Read as an estimate for the traffic those events
came from, R is a ratio estimator over a sample of events, and its standard
error follows from the per-event residuals (the delta method, as in survey
sampling): SE(R) = sqrt(sum((p_i - R s_i)^2) / (n (n - 1))) / mean(s). The 95%
interval is R +- 1.96 SE.

Two limits, each with its reason:

* ``MIN_EVENTS`` (30): below it no interval is given and the verdict says the
  sample is too small. With fewer than 30 events the residuals' spread is itself
  a poor estimate (the t quantile for 95% is 2.05 at 29 degrees of freedom and
  2.78 at 4: the normal 1.96 understates the interval by 4% and by 30%), and
  such a capture is one run's envelope (RUN_STARTED, a message or two,
  RUN_FINISHED), not its traffic.
* The interval treats events as drawn independently. Events of a stream are
  not (a message's deltas come in a row), so it is a lower bound on the
  uncertainty: it can say a capture does not settle a verdict, never that a
  verdict is certain.

Contract: ``ratio_interval(pairs)`` gives (low, high) for the (SSE bytes,
protobuf bytes) of each event, or None for fewer than ``MIN_EVENTS`` events.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

__all__ = ["MIN_EVENTS", "Z95", "ratio_interval"]

MIN_EVENTS: Final = 30
Z95: Final = 1.96  # the normal quantile of a two-sided 95% interval


def ratio_interval(pairs: Sequence[tuple[int, int]]) -> tuple[float, float] | None:
    """The 95% interval of sum(protobuf) / sum(SSE) (see the module doc)."""
    n = len(pairs)
    sse = sum(s for s, _ in pairs)
    if n < MIN_EVENTS or sse <= 0:
        return None
    ratio = sum(p for _, p in pairs) / sse
    spread = sum((p - ratio * s) ** 2 for s, p in pairs) / (n - 1)
    se = math.sqrt(spread / n) / (sse / n)
    return ratio - Z95 * se, ratio + Z95 * se
