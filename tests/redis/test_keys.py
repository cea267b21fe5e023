"""``agui_wire.redis._keys``: how a run lies in Redis. Its keys carry its owner and
id hashed (any strings are safe, owners never share a key) and one shard's hash
tag (a run's keys share a slot; the shards spread evenly over the slots); its
entries are ``n-g`` with field ``p``, its end ``N-(g+1)`` with ``end`` and ``by``
(the producer's token, ``<generation>:<random>``). A run id that is not one stores
nothing. The behaviours over these are the contract suite's (tests/runstore)."""

from __future__ import annotations

from typing import Any

import pytest
import redis.asyncio as aioredis

from agui_wire.redis import RunStore
from agui_wire.redis._keys import SLOTS, Layout, RunKeys, key_slot, parse_id
from examples.script import scripted_run
from tests.support.stores import Opened

pytestmark = pytest.mark.anyio

RUN = scripted_run("thread-1", "run-1")


@pytest.fixture
def r(opened: Opened, redis_server: Any) -> aioredis.Redis:
    return opened.redis(redis_server.url)


def test_a_runs_keys_share_one_slot_and_shards_spread_evenly() -> None:
    layout = Layout("agui:", 16)
    slots = sorted(key_slot("{" + tag + "}") for tag in layout.tags)
    for i, slot in enumerate(slots):  # shard i's slot lies in the i-th sixteenth
        assert i * SLOTS // 16 <= slot < (i + 1) * SLOTS // 16
    shards = [0] * 16
    for n in range(4000):
        keys = RunKeys(layout, "tenant", f"run-{n}")
        assert key_slot(keys.stream) == key_slot(keys.lease) == slots[keys.shard]
        assert key_slot(keys.snapshot) == slots[keys.shard]
        shards[keys.shard] += 1
    assert min(shards) > 4000 / 16 * 0.7  # the hash spreads runs over the shards
    for bad in ("a{b", "c}"):
        with pytest.raises(ValueError, match="braces"):
            Layout(bad, 16)
    with pytest.raises(ValueError, match="shards"):
        Layout("agui:", 0)


@pytest.mark.parametrize(
    "owner",
    ["a}b{c", "{alice}", "x" * 10_000, "\ud800 lone", "line\nbreak\x00", "ünïcødé", ":lease"],
)
def test_any_owner_string_makes_a_key_of_one_hash_tag_without_it(owner: str) -> None:
    keys = Layout("agui:", 16).keys(owner, "r1")
    assert "{" not in keys.stream.split("}", 1)[1]  # one hash tag, ours
    assert owner not in keys.stream
    assert len(keys.stream) < 60


def test_entry_ids() -> None:
    assert parse_id(b"12-42") == (12, 42)
    with pytest.raises(ValueError, match="invalid literal"):
        parse_id(b"x-1")


async def test_a_run_is_stored_as_entries_n_g_and_its_end(
    opened: Opened, r: aioredis.Redis, run_id: str
) -> None:
    store = opened.store(RunStore(r))
    assert await store.publish(run_id, RUN) == len(RUN)
    stored = await r.xrange(store.stream_key(run_id))
    assert len(stored) == len(RUN) + 1  # the events and the end marker
    gen = int(stored[0][0].split(b"-")[1])  # the run's generation: even, random
    assert gen % 2 == 0
    assert gen > 0
    assert [entry_id for entry_id, _ in stored[:3]] == [b"%d-%d" % (n, gen) for n in (1, 2, 3)]
    assert all(sorted(fields) == [b"p"] for _, fields in stored[:-1])
    end_id, end = stored[-1]
    assert end_id == f"{len(RUN)}-{gen + 1}".encode()
    assert end[b"end"] == b"finished"  # and ``by``: the producer's token
    assert sorted(end) == [b"by", b"end"]
    assert end[b"by"].split(b":")[0] == str(gen).encode()  # <generation>:<random>
    assert await r.exists(store.stream_key(run_id) + ":lease") == 0  # the lease went
    ttl = await r.pttl(store.stream_key(run_id))
    assert 0 < ttl <= 3_600_000  # kept ttl after its end


async def test_owners_have_keys_of_their_own(
    opened: Opened, r: aioredis.Redis, run_id: str
) -> None:
    store = opened.store(RunStore(r))
    assert store.stream_key(run_id, owner="alice") != store.stream_key(run_id, owner="bob")
    assert store.stream_key(run_id) != store.stream_key(run_id, owner="")
    await store.publish(run_id, RUN, owner="alice")
    assert await r.exists(store.stream_key(run_id, owner="alice")) == 1
    assert await r.exists(store.stream_key(run_id, owner="bob")) == 0


@pytest.mark.parametrize("bad", [123, None, "", "x" * 257], ids=repr)
async def test_a_run_id_that_is_not_one_stores_nothing(
    opened: Opened, r: aioredis.Redis, bad: Any
) -> None:
    store = opened.store(RunStore(r, prefix="ids:"))
    for call in (lambda: store.publish(bad, RUN), lambda: store.start(bad, RUN)):
        with pytest.raises(ValueError, match="256 UTF-8 bytes"):
            await call()
    with pytest.raises(ValueError, match="256 UTF-8 bytes"):
        store.stream_key(bad)
    assert await r.keys("ids:*") == []
