"""A run's names, as every backend of the run store gives them: run ids and owners
checked, the owner's namespace (``run_digest``), generations, the event ids clients
are given (``n-<generation>``, ``EventId``) and the resume positions they send
back, and the ``RUN_ERROR`` codes the store writes.

Generations. A run's *generation* is an even number drawn when the run is first
stored (``new_generation``), so a run produced again after its store lost it has
other ids and a reader never takes one for the other; the run's end is
``generation + 1`` (``generation_of`` maps both back). Its last three digits
(halved) are a check of the rest against the run id (``of_run``), so a position
naming a generation the run never had (made up, another run's) is told from one
of a generation lost and produced again (999 times in 1,000). Clients get ids
``n-g`` (``EventId``): the run's n-th event (1-based) of generation ``g``.
Positions are parsed by their length before their value (``INDEX_DIGITS``,
``GENERATION_DIGITS``), so a 10 KB id is refused naming these limits.

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
INDEX_DIGITS: Final = len(str(MAX_INDEX))  # 16
GENERATION_DIGITS: Final = len(str(MAX_GENERATION - 1))  # 13
_CHECK: Final = 1000  # a generation is 2 * (draw * _CHECK + check)


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


def new_generation(run_id: str) -> int:
    """A new generation of run ``run_id``: even (its end is ``generation + 1``), at
    least 2,000, below 10**13 (exact in Lua's numbers), random so that a run
    produced again after its store lost it never reuses it (one in 5 * 10**9), and
    checked against the run id (``of_run``)."""
    draw = 1 + secrets.randbelow(MAX_GENERATION // (2 * _CHECK) - 1)
    return 2 * (draw * _CHECK + _check(run_id, draw))


def of_run(run_id: str, generation: int) -> bool:
    """Could ``generation`` be one of run ``run_id``'s: even, drawn (``new_generation``
    draws from 1), and its check holds."""
    draw, check = divmod(generation // 2, _CHECK)
    return generation % 2 == 0 and draw >= 1 and check == _check(run_id, draw)


def _check(run_id: str, draw: int) -> int:
    h = hashlib.blake2b(digest_size=8, person=b"agui-wire-gen")
    h.update(draw.to_bytes(8, "big"))
    h.update(run_id.encode("utf-8", "surrogatepass"))
    return int.from_bytes(h.digest(), "big") % _CHECK


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
        self = int.__new__(cls, index)  # (not ``super()``: one per event a reader reads)
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
    as given to clients; ``ValueError`` naming what is wrong (and the limit, for a
    number too long: its length is looked at before its value)."""
    if isinstance(raw, EventId):
        return raw
    if isinstance(raw, int) and not isinstance(raw, bool):
        index, generation = raw, None
        if not 0 <= index <= MAX_INDEX:
            shown = f"{index}" if abs(index) < 10**40 else f"a {index.bit_length()}-bit int"
            raise ValueError(f"not an event index: {shown} (0 to {MAX_INDEX:,})")
        return EventId(index, generation)
    if not isinstance(raw, str):
        raise ValueError(f"an event index is an int or a string, not {type(raw).__name__}")
    text = raw.strip()
    head, dash, tail = text.partition("-")
    digits = head.isdigit() and head.isascii() and (not dash or (tail.isdigit() and tail.isascii()))
    if not digits:
        raise ValueError(f"not an event index (n) or id (n-<generation>): {_cut(text)}")
    if len(head) > INDEX_DIGITS:
        raise ValueError(
            f"not an event index: {len(head):,} digits, {_cut(text)} (an index has at most "
            f"{INDEX_DIGITS} digits: 0 to {MAX_INDEX:,})"
        )
    if len(tail) > GENERATION_DIGITS:
        raise ValueError(
            f"not an event id: its generation has {len(tail):,} digits, {_cut(text)} (at "
            f"most {GENERATION_DIGITS}: an even number below {MAX_GENERATION:,})"
        )
    index, generation = int(head), int(tail) if dash else None
    if generation is not None and generation % 2:
        raise ValueError(f"not an event id (no such generation): {_cut(text)}")
    if index > MAX_INDEX:
        raise ValueError(f"not an event index: {index} (0 to {MAX_INDEX:,})")
    return EventId(index, generation)


def _cut(text: str) -> str:
    return repr(text) if len(text) <= 40 else f"{text[:40]!r}..."
