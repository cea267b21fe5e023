"""The store's Lua scripts and their reply codes (``agui_wire.redis._scripts``).

Every code a script replies with is a ``Reply`` name (the prelude declares each as
a Lua local, so a misspelt one would be a nil code at run time, on the one path
that returns it), and every script compiles on the real Redis.
"""

from __future__ import annotations

import re

import pytest
from redis.exceptions import ResponseError

from agui_wire.redis import _claim, _leases, _pages, _producer
from agui_wire.redis._scripts import PRELUDE, Reply, Script
from tests.redis.harness import RedisServer
from tests.support.stores import Opened

SCRIPTS: dict[str, Script] = {
    "ACQUIRE": _claim.ACQUIRE,
    "APPEND": _producer.APPEND,
    "RENEW": _producer.RENEW,
    "FINISH": _producer.FINISH,
    "FAIL": _producer.FAIL,
    "LOSE": _producer.LOSE,
    "EXPIRE": _leases.EXPIRE,
    "RELEASE": _leases.RELEASE,
    "PAGE": _pages.PAGE,
}


def test_every_script_of_the_store_is_here() -> None:
    found = {
        name: value
        for module in (_claim, _leases, _pages, _producer)
        for name, value in vars(module).items()
        if isinstance(value, Script)
    }
    assert found == SCRIPTS


def test_every_code_a_script_replies_is_a_reply() -> None:
    for name, script in SCRIPTS.items():
        codes = re.findall(r"return \{([A-Za-z_0-9]+)", script.body)
        if name == "PAGE":  # replies entries, not a code
            assert codes == ["out", "out", "out", "out"]
            continue
        assert codes, name
        assert set(codes) <= set(Reply.__members__), (name, set(codes) - set(Reply.__members__))


def test_the_prelude_declares_each_code_as_its_value() -> None:
    first = PRELUDE.splitlines()[0]
    names, values = first.removeprefix("local ").split(" = ")
    assert dict(zip(names.split(", "), map(int, values.split(", ")), strict=True)) == {
        code.name: int(code) for code in Reply
    }


@pytest.mark.anyio
async def test_every_script_compiles_on_redis(opened: Opened, redis_server: RedisServer) -> None:
    r = opened.redis(redis_server.url)
    for script in SCRIPTS.values():
        assert (await r.script_load(script.body)) == script.sha
        if script.many is not None:
            assert (await r.script_load(script.many.body)) == script.many.sha


@pytest.mark.anyio
async def test_many_calls_as_one_each_with_its_own_keys_arguments_and_reply(
    opened: Opened, redis_server: RedisServer
) -> None:
    """``Script(many=True)``: calls of it as one script call, each run as its own (its
    KEYS and ARGV), in order, each replying its own; a call whose command Redis
    refuses replies that refusal alone, and the calls after it still run."""
    r = opened.redis(redis_server.url)
    one = Script(
        PRELUDE
        + """
redis.call('SET', KEYS[1], ARGV[1])
if KEYS[2] then redis.call('INCR', KEYS[2]) end
return {DONE, #ARGV, redis.call('GET', KEYS[1])}
""",
        many=True,
    )
    assert one.many is not None
    await r.set("many:text", "not a number")
    reply = await r.evalsha(
        one.many.sha if await r.script_load(one.many.body) else "",
        5,
        *("many:a", "many:b", "many:c", "many:text", "many:d"),
        *(3, 2, 1, 2, 1, 1, 1),  # three calls: keys and arguments of each
        *("x", "w", "v"),
    )
    assert reply[0] == [0, 1, b"x"]
    assert isinstance(reply[1], ResponseError)
    assert "not an integer" in str(reply[1])
    assert reply[2] == [0, 1, b"v"]
    # what the refused call wrote before its refusal stands, as it would alone
    assert await r.mget("many:a", "many:b", "many:c", "many:d") == [b"x", b"1", b"w", b"v"]


def test_a_script_with_a_flags_line_runs_alone() -> None:
    with pytest.raises(ValueError, match="flags line"):
        Script("#!lua flags=allow-oom\nreturn 1", many=True)
