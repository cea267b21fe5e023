"""The store's Lua scripts and their reply codes (``agui_wire.redis._scripts``).

Every code a script replies with is a ``Reply`` name (the prelude declares each as
a Lua local, so a misspelt one would be a nil code at run time, on the one path
that returns it), and every script compiles on the real Redis.
"""

from __future__ import annotations

import re

import pytest

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
