"""``agui_wire.redis._pipeline`` on a real redis-server: every short command of a
store goes through ``lanes`` connections, batched by itself when busy (a thousand
commands at once: a few round trips, at most ``lanes`` connections); each reply
or error reaches its own caller; a script Redis does not hold is loaded and sent
again; a round trip past its deadline is redis-py's ``TimeoutError`` for every
command in it, and the lane carries on."""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from redis.exceptions import DataError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from agui_wire.redis import _pipeline
from agui_wire.redis._pipeline import Pipeliner, within
from agui_wire.redis._scripts import Script
from tests.redis.faults import stopped
from tests.redis.harness import RedisServer
from tests.support.stores import Opened

pytestmark = pytest.mark.anyio


async def test_a_thousand_commands_through_a_few_connections(
    opened: Opened, redis_server: RedisServer
) -> None:
    r = opened.redis(redis_server.url)
    admin = opened.redis(redis_server.url)
    before = len(await admin.client_list())
    lanes = Pipeliner(r, 4, 2.0)
    replies = await asyncio.gather(*(lanes.call("ECHO", f"m{n}") for n in range(1000)))
    assert replies == [f"m{n}".encode() for n in range(1000)]
    assert len(await admin.client_list()) - before <= 4
    assert lanes.heard > 0  # when Redis last answered


async def test_each_caller_gets_its_own_reply_or_error(
    opened: Opened, redis_server: RedisServer
) -> None:
    lanes = Pipeliner(opened.redis(redis_server.url), 2, 2.0)
    results = await asyncio.gather(
        lanes.call("SET", "pipeline:k", "v"),
        lanes.call("INCR", "pipeline:k"),  # not an integer: this one fails alone
        lanes.call("GET", "pipeline:k"),
        return_exceptions=True,
    )
    assert results[0] == b"OK"  # as Redis sent it
    assert isinstance(results[1], ResponseError)
    assert results[2] == b"v"


async def test_a_script_redis_does_not_hold_is_loaded_and_sent_again(
    opened: Opened, redis_server: RedisServer
) -> None:
    r = opened.redis(redis_server.url)
    script = Script("return ARGV[1] .. '!'")
    await r.script_flush()
    lanes = Pipeliner(r, 2, 2.0)
    reply = await lanes.script(script, [], ["hi"])
    assert reply == b"hi!"


async def test_an_argument_redis_py_refuses_is_its_data_error_and_costs_no_connection(
    opened: Opened, redis_server: RedisServer
) -> None:
    """A bool (Redis would read 1 or 0 where a flag was meant), None: refused with
    redis-py's ``DataError`` and its words, as its own pipeline refuses them (a
    cluster's lanes go through it), to the round trip it was in, before anything
    is sent: the lane keeps its connection, and nothing was written."""
    lanes = Pipeliner(opened.redis(redis_server.url), 1, 2.0)
    connection = await lanes.call("CLIENT", "ID")
    for refused in (True, None):
        with pytest.raises(DataError, match=r"Invalid input of type: '(bool|NoneType)'"):
            await lanes.call("SET", "pipeline:refused", refused)
    assert await lanes.call("GET", "pipeline:refused") is None
    assert await lanes.call("CLIENT", "ID") == connection


# Lanes on a client without hiredis (redis-py's own reply parser), in a process
# of their own: the replies printed, an error as its class.
NO_HIREDIS = """
import asyncio, sys
sys.modules["hiredis"] = None  # as if redis[hiredis] were not installed
from redis.asyncio import from_url
from redis.utils import HIREDIS_AVAILABLE
from tests.redis.test_pipeline import exercise

async def main():
    assert not HIREDIS_AVAILABLE
    print(repr(await exercise(from_url(sys.argv[1]))))

asyncio.run(main())
"""


async def exercise(r: Any) -> list[Any]:
    """What lanes on one Redis answer: replies as Redis sent them, an error reply,
    a script loaded and sent again, a ``many`` script's calls as one; the client closed."""
    try:
        script = Script("return {ARGV[1], tonumber(ARGV[2]) + 1}", many=True)
        await r.script_flush()
        await r.delete("nohiredis:k", "nohiredis:h")
        lanes = Pipeliner(r, 2, 5.0)
        calls = [
            lanes.call("SET", "nohiredis:k", "v\r\n\u00e9"),
            lanes.call("GET", "nohiredis:k"),
            lanes.call("INCR", "nohiredis:k"),
            lanes.call("HSET", "nohiredis:h", "f", 1.5),
            *(lanes.script(script, [], [b"x", n]) for n in range(3)),
        ]
        replies = await asyncio.gather(*calls, return_exceptions=True)
        lanes.close()
        return [type(x).__name__ if isinstance(x, Exception) else x for x in replies]
    finally:
        await r.aclose()


async def test_without_hiredis_lanes_pack_in_one_call_and_answer_alike(
    redis_server: RedisServer,
) -> None:
    """hiredis is optional for the lanes: without it (redis-py parses the replies
    in Python) they still send each round trip packed in one call on their own
    connection, and answer exactly what they answer with it."""
    from redis.asyncio import from_url

    expected = await exercise(from_url(redis_server.url))
    assert expected[:2] == [b"OK", "v\r\n\u00e9".encode()]  # as Redis sent them
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-c", NO_HIREDIS, redis_server.url],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=root,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == repr(expected)


async def test_calls_of_a_many_script_queued_together_go_to_redis_as_one(
    opened: Opened, redis_server: RedisServer
) -> None:
    """On one Redis, calls of a ``Script(many=True)`` queued together are one
    ``EVALSHA`` of its ``many`` script (loaded when Redis lacks it), each caller
    with its own reply or refusal; a caller cancelled before the round trip is
    left out of it."""
    r = opened.redis(redis_server.url)
    admin = opened.redis(redis_server.url)
    script = Script(
        "redis.call('SET', KEYS[1], ARGV[1]) return redis.call('INCR', KEYS[2])", many=True
    )
    await r.script_flush()
    await admin.set("many:text", "not a number")
    await admin.config_resetstat()
    lanes = Pipeliner(r, 1, 2.0)

    def call(n: int, counter: str) -> asyncio.Future[object]:
        return asyncio.ensure_future(lanes.script(script, [f"many:{n}", counter], [f"v{n}"]))

    calls = [call(n, "many:text" if n == 7 else f"many:count:{n}") for n in range(100)]
    await asyncio.sleep(0)  # each caller queued its call
    calls[3].cancel()
    results = await asyncio.gather(*calls, return_exceptions=True)
    assert isinstance(results[3], asyncio.CancelledError)
    assert isinstance(results[7], ResponseError)
    assert "not an integer" in str(results[7])
    assert [x for n, x in enumerate(results) if n not in (3, 7)] == [1] * 98
    assert await admin.get("many:3") is None  # never sent
    assert await admin.get("many:7") == b"v7"  # (written before its refusal, as alone)
    stats = await admin.info("commandstats")
    # one round trip of one call (refused: not loaded), then the same call again
    assert stats["cmdstat_evalsha"]["calls"] == 2
    assert stats["cmdstat_set"]["calls"] == 99
    stored = await admin.mget([f"many:{n}" for n in range(100)])
    assert stored == [None if n == 3 else f"v{n}".encode() for n in range(100)]


async def test_a_round_trip_past_its_deadline_times_out_and_the_lane_goes_on(
    opened: Opened, fresh_redis: Callable[..., RedisServer]
) -> None:
    server = fresh_redis()
    lanes = Pipeliner(opened.redis(server.url), 1, 0.3)
    assert await lanes.call("PING") == b"PONG"
    with stopped(server, 1.0):
        with pytest.raises(RedisTimeoutError):
            await lanes.call("PING")
        await asyncio.sleep(1.0)
    assert await lanes.call("PING") == b"PONG"  # a new connection, once Redis answers


async def test_a_lane_waits_for_the_next_command_then_lets_its_connection_go(
    opened: Opened, redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_pipeline, "IDLE", 0.3)
    r = opened.redis(redis_server.url)
    lanes = Pipeliner(r, 4, 2.0)
    assert await lanes.call("PING") == b"PONG"
    (lane,) = lanes.tasks
    for n in range(20):  # one after the other: the same lane, its connection kept
        assert await lanes.call("ECHO", f"m{n}") == f"m{n}".encode()
    assert lanes.tasks == {lane}
    assert len(r.connection_pool._in_use_connections) == 1
    await asyncio.sleep(0.6)  # nothing more to send: the lane ends, its connection back
    assert lane.done()
    assert not lanes.tasks
    assert not r.connection_pool._in_use_connections
    assert await lanes.call("PING") == b"PONG"  # and the next command opens a lane
    lanes.close()
    await asyncio.sleep(0)
    assert not lanes.tasks


async def test_a_round_trip_whose_replies_keep_coming_outlasts_its_deadline(
    opened: Opened, fresh_redis: Callable[..., RedisServer]
) -> None:
    """The deadline is for a silent Redis: one round trip of five commands, each
    answered 0.4 s after the one before (a BLPOP that times out; Redis times it out
    within 0.1 s of that, and a loaded machine later), lasts 2 s, twice its 1 s
    deadline; a Redis that stops answering still times out."""
    server = fresh_redis()
    lanes = Pipeliner(opened.redis(server.url), 1, 1.0)
    assert await lanes.call("PING") == b"PONG"
    replies = await asyncio.gather(
        *(lanes.call("BLPOP", "pipeline:nothing", "0.4") for _ in range(5))
    )
    assert replies == [None] * 5
    with stopped(server, 2.5), pytest.raises(RedisTimeoutError):
        await lanes.call("PING")


async def test_a_round_trip_leaves_no_reference_cycle(
    opened: Opened, redis_server: RedisServer
) -> None:
    """What a round trip allocates is freed as it ends (reference counting): none
    of it waits for the cyclic GC, whose young collections, set off by what is
    left, pause every run on the loop (a replica sends hundreds of round trips a
    second; a fold, one per page)."""
    lanes = Pipeliner(opened.redis(redis_server.url), 1, 2.0)
    assert await lanes.call("PING") == b"PONG"  # the lane and its connection opened
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what a collection would free, kept to look at
    try:
        for n in range(100):
            assert await lanes.call("ECHO", f"m{n}") == f"m{n}".encode()
        gc.collect()
        left = sorted({type(o).__qualname__ for o in gc.garbage})
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert left == []


async def test_within_is_a_deadline_of_the_stores_own() -> None:
    assert await within(asyncio.sleep(0, "done"), 1) == "done"
    with pytest.raises(RedisTimeoutError, match=r"no reply from Redis within 0\.05 s"):
        await within(asyncio.sleep(5), 0.05)
