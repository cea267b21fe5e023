"""A Redis the store cannot work with is refused when a producer claims a run, typed
(``StoreUnsupported``), before anything of the run is stored.

The script that ends a failed run carries flags (``#!lua flags=allow-oom``, Redis
7.0) and runs only when a producer fails. On redis-server 6.2 the happy path used
to work; the first producer that failed left its run without its ``RUN_ERROR``
(Redis refused the script) and readers waited ``lease`` seconds for
``LEASE_EXPIRED``. Readers are not asked (they use no script that needs 7.0, and
find no run). Against the real redis-server 6.2.14 (tests/redis/pinned.py).
"""

from __future__ import annotations

from typing import Any

import pytest
import redis.asyncio as aioredis

from agui_wire.errors import StoreError, StoreUnsupported
from agui_wire.redis import RunStore
from tests.redis import pinned
from tests.redis.conftest import run

STARTED = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
REFUSED = r"run '.*': Redis refused the store's scripts \(they need Redis 7\.0 or later\): .+"


def test_a_redis_older_than_7_is_refused_before_anything_is_stored(fresh_redis, run_id) -> None:
    redis_62 = fresh_redis(binary=pinned.REDIS_62.path())

    async def main() -> None:
        r = aioredis.from_url(redis_62.url)
        assert (await r.info("server"))["redis_version"] == pinned.REDIS_62.version
        store = RunStore(r, lease=1)
        pulled: list[str] = []

        async def fails() -> Any:
            pulled.append("first")
            yield STARTED
            raise RuntimeError("the model call failed")

        with pytest.raises(StoreUnsupported, match=REFUSED) as refused:
            await store.publish(run_id, fails())
        assert refused.value.run_id == run_id
        with pytest.raises(StoreUnsupported, match=REFUSED):
            await store.start(f"{run_id}-2", fails())
        assert pulled == []
        assert await r.keys("*") == []  # nothing of either run

        # and again on every call, not only the first (Redis may be upgraded meanwhile)
        with pytest.raises(StoreUnsupported, match=REFUSED):
            await store.publish(run_id, [STARTED])
        await store.aclose()
        await r.aclose()

    run(main())


@pytest.mark.valkey  # Valkey's ACL refusal too
def test_a_user_not_allowed_to_load_scripts_is_told_so_not_that_redis_is_old(
    fresh_redis, run_id
) -> None:
    """The same question on Redis 7 (an ACL user without ``SCRIPT LOAD``): Redis's
    own refusal (``NOPERM``), as the ``StoreError`` every refusal is."""
    server = fresh_redis()

    async def main() -> None:
        admin = aioredis.from_url(server.url)
        await admin.execute_command(
            "ACL", "SETUSER", "app", "on", ">secret", "~*", "&*", "+@all", "-script|load"
        )
        r = aioredis.from_url(server.url, username="app", password="secret")
        with pytest.raises(
            StoreError, match=r"no permissions to run the 'script\|load'"
        ) as refused:
            await RunStore(r).publish(run_id, [STARTED])
        assert type(refused.value) is StoreError
        assert await admin.keys("*") == []
        await r.aclose()
        await admin.aclose()

    run(main())
