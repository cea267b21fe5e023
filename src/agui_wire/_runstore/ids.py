"""A run's names, as every backend of the run store gives them: run ids and owners
checked, the owner's namespace (``run_digest``), generations, the event ids clients
are given (``n-<generation>``, ``EventId``) and the resume positions they send
back, and the ``RUN_ERROR`` codes the store writes.

Generations. A run's *generation* is an even number drawn when the run is first
stored (``new_generation``), so a run produced again after its store lost it has
other ids and a reader never takes one for the other; the run's end is
``generation + 1`` (``generation_of`` maps both back). Clients get ids ``n-g``
(``EventId``): the run's n-th event (1-based) of generation ``g``.

Imports nothing of the run store: everything else builds on it.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any, Final

#: ``RUN_ERROR`` codes the store writes.
LEASE_EXPIRED: Final = "LEASE_EXPIRED"
RUN_LOST: Final = "RUN_LOST"
RUN_REPLACED: Final = "RUN_REPLACED"
STORE_FULL: Final = "STORE_FULL"
STORE_CORRUPTED: Final = "STORE_CORRUPTED"

#: ``StoreUnavailable``'s reason once its store is closed (``RunStore.aclose``).
CLOSED: Final = "the store was closed"

#: The longest run id, in UTF-8 bytes.
MAX_RUN_ID_BYTES: Final = 256
MAX_GENERATION: Final = 10**13  # generations are even numbers below it
MAX_INDEX: Final = 2**53  # the largest event index a position may name


def check_run_id(run_id: object) -> str:
    """``run_id`` if it is a run id (a ``str`` of 1 to ``MAX_RUN_ID_BYTES`` UTF-8
    bytes), else ``ValueError`` naming the rule it breaks."""
    rule = f"a run id is a string of 1 to {MAX_RUN_ID_BYTES} UTF-8 bytes"
    if not isinstance(run_id, str):
        raise ValueError(f"{rule}, not {type(run_id).__name__} {_shown(run_id)}")
    try:
        size = len(run_id.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise ValueError(f"{rule}: {_shown(run_id)} has a lone surrogate at {exc.start}") from None
    if not 0 < size <= MAX_RUN_ID_BYTES:
        raise ValueError(f"{rule}, not {size} bytes: {_shown(run_id)}")
    return run_id


def check_owner(owner: object) -> str | None:
    if owner is not None and not isinstance(owner, str):
        raise ValueError(f"owner must be a string or None, not {type(owner).__name__}")
    return owner


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


def run_digest(owner: str | None, run_id: str) -> bytes:
    """``owner``'s run ``run_id`` as 16 bytes (BLAKE2b): any strings are safe, and two
    owners never share a run whatever ids they choose; ``owner=None`` is a
    namespace of its own (the shared one of single-tenant apps)."""
    h = hashlib.blake2b(digest_size=16, person=b"agui-wire-run")
    if owner is None:
        h.update(b"\x00")
    else:
        raw = owner.encode("utf-8", "surrogatepass")
        h.update(b"\x01" + len(raw).to_bytes(8, "big") + raw)
    h.update(run_id.encode("utf-8"))
    return h.digest()


def new_generation() -> int:
    """A new run's generation: even (its end is ``generation + 1``), at least 2, and
    below 10**13 (exact in Lua's numbers), random so that a run produced again
    after its store lost it never reuses it."""
    return 2 + 2 * secrets.randbelow(MAX_GENERATION // 2 - 1)


def generation_of(seq: int) -> int:
    """The generation of an entry id's sequence (an event's, or an end's)."""
    return seq - seq % 2


class EventId(int):
    """A run's event index (an ``int``, 1-based) that carries the run's generation:
    ``str()`` is ``n-<generation>``, the id clients are given (SSE ``id:``, the
    ``agui-after`` header), so that a resume of a run replaced meanwhile is refused
    rather than continued with the other run's events. ``subscribe`` yields these;
    ``after=`` takes one, its ``str()``, or a plain index (no generation check)."""

    generation: int | None

    def __new__(cls, index: int, generation: int | None = None) -> EventId:
        self = super().__new__(cls, index)
        self.generation = generation
        return self

    def __str__(self) -> str:
        n = int(self)
        return str(n) if self.generation is None else f"{n}-{self.generation}"

    def __repr__(self) -> str:
        return f"EventId({int(self)}, generation={self.generation})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (EventId, (int(self), self.generation))


def parse_position(raw: object) -> EventId:
    """A resume position: an index ``n`` (int or digits) or an id ``n-<generation>``
    as given to clients; ``ValueError`` naming what is wrong."""
    if isinstance(raw, EventId):
        return raw
    if isinstance(raw, int) and not isinstance(raw, bool):
        index, generation = raw, None
    elif isinstance(raw, str):
        text = raw.strip()
        head, dash, tail = text.partition("-")
        if not (
            head.isdigit() and head.isascii() and (not dash or (tail.isdigit() and tail.isascii()))
        ):
            raise ValueError(f"not an event index (n) or id (n-<generation>): {text[:40]!r}")
        index, generation = int(head), int(tail) if dash else None
        if generation is not None and (generation % 2 or generation >= MAX_GENERATION):
            raise ValueError(f"not an event id (no such generation): {text[:40]!r}")
    else:
        raise ValueError(f"an event index is an int or a string, not {type(raw).__name__}")
    if not 0 <= index <= MAX_INDEX:
        raise ValueError(f"not an event index: {index} (0 to {MAX_INDEX:,})")
    return EventId(index, generation)
