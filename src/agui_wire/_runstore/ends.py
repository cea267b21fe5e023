"""How a run ends: the reasons its end marker gives, and the ``RUN_ERROR`` events a
store writes for the ends its producer did not write itself.

Contract: every backend ends a run with one of the four reasons (Redis also with
``LOST``, after a failover lost events it had acknowledged) and, after a
failure, the same ``RUN_ERROR`` (same message, same code), so a reader cannot
tell the backends apart by a run's end.
"""

from __future__ import annotations

import functools
from typing import Any, Final

from .._codec.selected import encode_payload
from .._streaming import default_error_event
from ..errors import StoreFull
from .ids import LEASE_EXPIRED, STORE_FULL

#: The reasons an end marker gives.
FINISHED: Final = (
    "finished"  # the producer's events ran out (or its lease lapsed after a terminal one)
)
CANCELLED: Final = "cancelled"  # the producer was cancelled (RUN_ERROR CANCELLED)
FAILED: Final = "failed"  # the producer raised (RUN_ERROR)
LEASE_LAPSED: Final = "lease-expired"  # the producer vanished (RUN_ERROR LEASE_EXPIRED)
LOST: Final = "lost"  # the store lost acknowledged events (RUN_ERROR RUN_LOST)


def failure_event(exc: Exception | None) -> dict[str, Any]:
    """The ``RUN_ERROR`` a run ends with after its producer was cancelled (``None``)
    or raised ``exc``."""
    if exc is None:
        return {
            "type": "RUN_ERROR",
            "message": "the run was cancelled on the server",
            "code": "CANCELLED",
        }
    if isinstance(exc, StoreFull):
        return {
            "type": "RUN_ERROR",
            "message": "the run store is full (Redis maxmemory)",  # only Redis fills
            "code": STORE_FULL,
        }
    return default_error_event(exc)


@functools.cache
def expired_payload(lease: float) -> bytes:
    """The ``RUN_ERROR`` a run whose lease lapsed ends with (its protobuf payload)."""
    return encode_payload(
        {
            "type": "RUN_ERROR",
            "message": f"the run's producer stopped: no heartbeat within its lease of {lease:g} s",
            "code": LEASE_EXPIRED,
        }
    )
