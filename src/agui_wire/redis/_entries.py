"""Stream entries as the shared batches of the run store's core (``_runstore.batches``).

Contract: ``entries`` turns the entries Redis returned after a cursor into one
``Batch`` and checks that they follow on and are entries the store writes; an
entry's fields are a mapping (redis-py's XRANGE/XREAD), a flat list (a script's
reply, or a raw reply), or the payload alone (``bytes``: the page script's usual
entry); ``fields_of`` reads the first two.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .._runstore.batches import Batch
from .._runstore.ids import generation_of
from ..errors import HistoryTrimmed, RunLost, RunReplaced, StoreCorrupted
from ._keys import END, PAYLOAD, RunKeys, parse_id


def entries(keys: RunKeys, cursor: int, generation: int | None, stream: Any) -> tuple[Batch, bool]:
    """Stream entries after ``cursor`` as one batch of the run's ``generation``
    (``None``: learnt from the first entry). Checks that they follow on and are
    entries the store writes: ``HistoryTrimmed`` for a first event past the
    cursor, ``RunLost`` for a gap, ``RunReplaced`` for an event of another
    generation, ``StoreCorrupted`` (naming the entry) for anything else. An
    entry's fields are a mapping (redis-py's XRANGE/XREAD), a flat list (a
    script's reply, or a raw reply) or its payload alone (the page script's)."""
    payloads: list[bytes] = []
    end: str | None = None
    expected = cursor + 1
    fast = None if generation is None else b"%d-%d" % (expected, generation)
    for raw_id, raw_fields in stream:
        # the usual entry, ``n-<gen>`` with one payload, without a dict (replays of
        # long runs read hundreds of thousands)
        if raw_id == fast and type(raw_fields) is bytes:
            payloads.append(raw_fields)
            expected += 1
            fast = b"%d-%d" % (expected, generation or 0)
            continue
        if (
            raw_id == fast
            and type(raw_fields) is list
            and len(raw_fields) == 2
            and raw_fields[0] == PAYLOAD
        ):
            payloads.append(raw_fields[1])
            expected += 1
            fast = b"%d-%d" % (expected, generation or 0)
            continue
        entry = bytes(raw_id).decode("ascii", "replace")
        try:
            n, seq = parse_id(raw_id)
            if isinstance(raw_fields, bytes):
                fields: Mapping[Any, Any] = {PAYLOAD: raw_fields}
            elif isinstance(raw_fields, Mapping):
                fields = raw_fields
            else:
                fields = _pairs(raw_fields)
        except (ValueError, TypeError) as exc:  # pragma: no cover - Redis checks ids
            raise StoreCorrupted(keys.run_id, keys.stream, entry, f"not an entry: {exc}") from None
        gen = generation_of(seq)
        if generation is None:
            generation = gen
        if gen != generation:
            if seq % 2 == 0:
                raise RunReplaced(
                    keys.run_id,
                    f"the stream holds another run under this id now (generation {gen}, "
                    f"not {generation}): Redis lost the run and it was produced again",
                )
            raise StoreCorrupted(
                keys.run_id, keys.stream, entry, "an end marker of no generation of this run"
            )
        if seq % 2:
            if n != expected - 1 or END not in fields or not set(fields) <= _END_FIELDS:
                raise StoreCorrupted(
                    keys.run_id,
                    keys.stream,
                    entry,
                    f"not an end marker the store writes (after event {expected - 1}: "
                    f"{_shown(fields)})",
                )
            end = bytes(fields[END]).decode("utf-8", "replace")
            break
        if n != expected:
            if not payloads and n > expected:
                raise HistoryTrimmed(keys.run_id, cursor, n)
            raise RunLost(keys.run_id, f"event {expected} is missing from the stream")
        if len(fields) != 1 or PAYLOAD not in fields:
            raise StoreCorrupted(
                keys.run_id,
                keys.stream,
                entry,
                f"an event entry holds one field {PAYLOAD.decode()!r}, not {_shown(fields)}",
            )
        payloads.append(bytes(fields[PAYLOAD]))
        expected += 1
        fast = b"%d-%d" % (expected, generation)
    return Batch(keys, generation, cursor + 1, payloads, end), end is not None


_END_FIELDS: Final = frozenset({END, b"by"})


def _shown(fields: Mapping[Any, Any]) -> str:
    text = repr(sorted(bytes(k) for k in fields))
    return text if len(text) <= 80 else f"{text[:77]}..."


def fields_of(raw: Any) -> dict[bytes, Any]:
    """An entry's fields as a mapping, from redis-py's mapping or a flat list."""
    return dict(raw) if isinstance(raw, Mapping) else _pairs(raw)


def _pairs(flat: list[Any]) -> dict[bytes, Any]:
    return dict(zip(flat[::2], flat[1::2], strict=True))
