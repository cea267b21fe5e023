"""A Redis the store cannot work with is refused when a producer claims a run, typed
(``StoreUnsupported``), before anything of the run is stored.

The script that ends a failed run carries flags (``#!lua flags=allow-oom``, Redis
7.0) and runs only when a producer fails: on redis-server 6.2 the happy path
would work and the first producer that failed leave its run without its
``RUN_ERROR`` (Redis refusing the script), its readers waiting ``lease`` seconds for
``LEASE_EXPIRED``; so the claim asks first. Readers are not asked (they use no
script that needs 7.0, and find no run). Against the real redis-server 6.2.14
(tests/redis/pinned.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from agui_wire.errors import StoreError, StoreUnsupported
from agui_wire.redis import RunStore
from tests.redis import pinned
from tests.support.stores import Opened

STARTED = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
REFUSED = r"run '.*': Redis refused the store's scripts \(they need Redis 7\.0 or later\): .+"

pytestmark = pytest.mark.anyio


async def test_a_redis_older_than_7_is_refused_before_anything_is_stored(
    opened: Opened, fresh_redis, run_id
) -> None:
    redis_62 = fresh_redis(binary=pinned.REDIS_62.path())

    r = opened.redis(redis_62.url)
    assert (await r.info("server"))["redis_version"] == pinned.REDIS_62.version
    store = opened.store(RunStore(r, lease=1))
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


@pytest.mark.valkey  # Valkey's ACL refusal too
async def test_a_user_not_allowed_to_load_scripts_is_told_so_not_that_redis_is_old(
    opened: Opened, fresh_redis, run_id
) -> None:
    """The same question on Redis 7 (an ACL user without ``SCRIPT LOAD``): Redis's
    own refusal (``NOPERM``), as the ``StoreError`` every refusal is."""
    server = fresh_redis()

    admin = opened.redis(server.url)
    await admin.execute_command(
        "ACL", "SETUSER", "app", "on", ">secret", "~*", "&*", "+@all", "-script|load"
    )
    r = opened.redis(server.url, username="app", password="secret")
    with pytest.raises(StoreError, match=r"no permissions to run the 'script\|load'") as refused:
        await opened.store(RunStore(r)).publish(run_id, [STARTED])
    assert type(refused.value) is StoreError
    assert await admin.keys("*") == []
