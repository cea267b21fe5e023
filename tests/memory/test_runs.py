"""``agui_wire.memory._runs``: a run in memory, the rules that change it, and the
table that forgets runs when their time is up (bounded memory: ten thousand
runs come and go)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from agui_wire import PROTO_MEDIA_TYPE, decode
from agui_wire._codec.selected import encode_payload
from agui_wire._runstore.options import Options
from agui_wire._runstore.read import Inbox
from agui_wire.errors import RunLost
from agui_wire.memory._runs import Key, Run, Runs

STARTED = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
FINISHED = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}


def options(**kw: Any) -> Options:
    base: dict[str, Any] = {
        "ttl": 10,
        "lease": 3,
        "maxlen": None,
        "batch": 512,
        "backlog": 64,
        "page_bytes": 1 << 20,
    }
    return Options(**{**base, **kw})


def tick(n: int) -> dict[str, Any]:
    return {"type": "CUSTOM", "name": "t", "value": n}


def payloads(events: list[dict[str, Any]]) -> list[bytes]:
    return [encode_payload(e) for e in events]


def test_a_key_is_the_owner_and_the_run_id() -> None:
    assert Key("a", "r").stream == Key("a", "r").stream
    assert Key("a", "r").stream != Key("b", "r").stream != Key(None, "r").stream
    with pytest.raises(ValueError, match="run id"):
        Key("a", "")
    with pytest.raises(ValueError, match="owner"):
        Key(1, "r")


def test_appends_skip_what_is_stored_and_reach_every_reader_as_one_batch() -> None:
    run = Run(Key(None, "r"), 2, [])
    inboxes = [Inbox(8, 1 << 20) for _ in range(3)]
    run.inboxes.update(inboxes)
    o = options()
    run.append(1, payloads([STARTED, tick(1)]), o)
    run.append(2, payloads([tick(1), tick(2)]), o)  # event 2 again: skipped
    assert run.last == 3
    firsts = [[(b.first, b.last) for b in inbox.batches] for inbox in inboxes]
    assert firsts == [[(1, 2), (3, 3)]] * 3
    assert inboxes[0].batches[1] is inboxes[2].batches[1]  # shared


def test_maxlen_trims_a_quarter_past_it_and_folds_what_it_trims() -> None:
    run = Run(Key(None, "r"), 2, [])
    o = options(maxlen=8)
    events = [STARTED, *(tick(n) for n in range(20))]
    for n, event in enumerate(events, 1):
        run.append(n, payloads([event]), o)
        assert len(run.payloads) <= 10  # maxlen + maxlen // 4
    assert run.last == len(events)
    assert run.first == run.folded + 1
    assert len(run.payloads) >= 8
    snapshot = run.snapshot()
    assert snapshot is not None
    folded, generation, prefix = snapshot
    assert (folded, generation) == (run.first - 1, 2)
    assert prefix[0] == STARTED  # the fold of the trimmed events


def test_a_trimmed_run_that_cannot_be_folded_has_no_snapshot() -> None:
    run = Run(Key(None, "r"), 2, [])
    chunk = {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "x"}
    for n, event in enumerate([STARTED, *[chunk] * 20], 1):
        run.append(n, payloads([event]), options(maxlen=4))
    assert run.first > 1
    assert run.snapshot() is None


def test_the_lease_is_the_holders_until_it_lapses() -> None:
    run = Run(Key(None, "r"), 2, [])
    o = options(lease=3)
    assert run.takes("a", 0.0, o)
    assert (run.held_by(2.9), run.lease_until, run.expires) == ("a", 3.0, 13.0)
    assert not run.takes("b", 1.0, o)  # another's lease
    assert run.held_by(3.0) is None  # lapsed
    assert run.takes("a", 5.0, o)  # the holder carries on while nobody took it
    assert run.takes("b", 8.5, o)  # lapsed: another takes it
    assert not run.takes("a", 9.0, o)


def test_a_lapsed_lease_ends_the_run_after_a_terminal_event_or_with_run_error() -> None:
    o = options(lease=3)
    for events, ending in (([STARTED, FINISHED], []), ([STARTED, tick(1)], ["RUN_ERROR"])):
        run = Run(Key(None, "r"), 2, [])
        inbox = Inbox(8, 1 << 20)
        run.inboxes.add(inbox)
        run.takes("a", 0.0, o)
        run.append(1, payloads(events), o)
        assert not run.expire(2.0, o)  # the lease lives
        assert run.expire(4.0, o)
        assert not run.expire(5.0, o)  # once
        end = inbox.batches[-1]
        assert [e["type"] for e in decode(end.data(True), PROTO_MEDIA_TYPE)] == ending
        assert end.end == ("finished" if not ending else "lease-expired")
        assert (run.end, run.holder, run.expires) == (end.end, None, 14.0)


def test_runs_are_forgotten_when_their_time_is_up() -> None:
    o = options(ttl=10, lease=3)
    runs = Runs(o)
    live = runs.create(Key(None, "live"), 2, 0.0)
    ended = runs.create(Key(None, "ended"), 4, 0.0)
    ended.close("finished", "t", 1.0, o)  # kept ttl after its end: 11
    reader = Inbox(8, 1 << 20)
    live.inboxes.add(reader)
    assert runs.get(Key(None, "ended"), 10.9) is ended
    assert runs.get(Key(None, "ended"), 11.0) is None
    live.takes("p", 11.0, o)  # a heartbeat: kept lease + ttl from then (24)
    assert runs.get(Key(None, "live"), 23.9) is live
    assert reader.error is None
    assert runs.get(Key(None, "live"), 24.0) is None
    assert isinstance(reader.error, RunLost)
    assert runs.runs == {}


def test_ten_thousand_runs_come_and_go() -> None:
    o = options(ttl=1, lease=1)
    runs = Runs(o)
    for n in range(10_000):
        run = runs.create(Key("tenant", f"r{n}"), 2, n / 1000)
        run.takes("p", n / 1000, o)
        run.append(1, payloads([STARTED, FINISHED]), o)
        run.close("finished", "p", n / 1000, o)
        runs.purge(n / 1000)
        assert len(runs.runs) <= 1001  # those within their ttl
    runs.purge(math.inf)
    assert runs.runs == {}
    assert runs.expiries == []
