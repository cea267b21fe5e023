"""``agui_wire.redis._entries``: stream entries as Redis returns them, read into one
shared batch and checked: they follow on from the cursor, or the reader is told
why not (trimmed, lost, replaced, corrupted), never given a gap."""

from __future__ import annotations

from typing import Any

import pytest

from agui_wire._codec.selected import encode_payload
from agui_wire.errors import HistoryTrimmed, RunLost, RunReplaced, StoreCorrupted
from agui_wire.redis._entries import entries, fields_of
from agui_wire.redis._keys import Layout

KEYS = Layout("t:", 1).keys(None, "run")
GEN = 42
EVENTS = [{"type": "CUSTOM", "name": "t", "value": i} for i in range(5)]


def entry(n: int, event: dict[str, Any], gen: int = GEN, mapping: bool = False) -> Any:
    fields: Any = [b"p", encode_payload(event)]
    if mapping:
        fields = dict(zip(fields[::2], fields[1::2], strict=True))
    return (b"%d-%d" % (n, gen), fields)


def end(n: int, gen: int = GEN, reason: bytes = b"finished", **more: bytes) -> Any:
    return (
        b"%d-%d" % (n, gen + 1),
        [b"end", reason, *[x for k, v in more.items() for x in (k.encode(), v)]],
    )


@pytest.mark.parametrize("mapping", [False, True], ids=["flat", "mapping"])
def test_entries_that_follow_on_are_one_batch(mapping: bool) -> None:
    found = [entry(n, e, mapping=mapping) for n, e in enumerate(EVENTS, 3)]
    batch, ended = entries(KEYS, 2, GEN, found)
    assert (batch.first, batch.last, batch.generation, ended) == (3, 7, GEN, False)
    assert batch.events() == EVENTS


def test_the_end_marker_ends_the_batch_and_teaches_the_generation() -> None:
    batch, ended = entries(KEYS, 0, None, [entry(1, EVENTS[0]), end(1, by=b"42:tok")])
    assert (batch.generation, batch.end, ended, batch.last) == (GEN, "finished", True, 1)
    alone, ended = entries(KEYS, 1, GEN, [end(1, reason=b"lease-expired")])
    assert (alone.payloads, alone.end, ended) == ([], "lease-expired", True)


def test_a_first_entry_past_the_cursor_is_trimmed_history() -> None:
    with pytest.raises(HistoryTrimmed) as info:
        entries(KEYS, 0, GEN, [entry(40, EVENTS[0])])
    assert (info.value.after, info.value.first) == (0, 40)


def test_a_gap_is_a_lost_event() -> None:
    with pytest.raises(RunLost, match="event 2 is missing"):
        entries(KEYS, 0, GEN, [entry(1, EVENTS[0]), entry(3, EVENTS[1])])


def test_another_generation_is_another_run() -> None:
    with pytest.raises(RunReplaced, match="generation 44, not 42"):
        entries(KEYS, 0, GEN, [entry(1, EVENTS[0], gen=44)])


@pytest.mark.parametrize(
    ("found", "says"),
    [
        ([end(3)], "not an end marker the store writes (after event 0"),
        ([(b"1-43", [b"end", b"x", b"junk", b"1"])], "not an end marker the store writes"),
        ([(b"1-42", [b"q", b"x"])], "an event entry holds the field 'p'"),
        ([(b"1-42", [b"p", b"x", b"q", b"y"])], "an event entry holds the field 'p'"),
        ([(b"1-45", [b"end", b"x"])], "an end marker of no generation of this run"),
    ],
)
def test_what_the_store_never_writes_is_corrupted_and_named(found: Any, says: str) -> None:
    with pytest.raises(StoreCorrupted) as info:
        entries(KEYS, 0, GEN, found)
    assert says in str(info.value)
    assert info.value.key == KEYS.stream
    assert info.value.entry_id == found[0][0].decode()


def test_fields_of_a_flat_reply_or_a_mapping() -> None:
    assert fields_of([b"a", 1, b"b", 2]) == {b"a": 1, b"b": 2}
    assert fields_of({b"a": 1}) == {b"a": 1}
