"""``agui_wire._runstore.options``: the options every backend takes, checked once
(the same words from either store), and ``poll``."""

from __future__ import annotations

from typing import Any

import pytest

from agui_wire._runstore.options import Options
from tests.runstore.kit import Kit

DEFAULTS: dict[str, Any] = {
    "ttl": 3600.0,
    "lease": 30.0,
    "maxlen": None,
    "batch": 512,
    "backlog": 64,
    "page_bytes": 1 << 20,
}


def test_poll_is_a_quarter_lease_at_most_a_second() -> None:
    assert Options(**DEFAULTS).poll == 1.0
    assert Options(**{**DEFAULTS, "lease": 2}).poll == 0.5
    options = Options(**{**DEFAULTS, "ttl": 5, "maxlen": 3})
    assert (options.ttl, options.maxlen) == (5.0, 3)
    assert isinstance(options.ttl, float)


BAD = [
    ({"ttl": 0}, "ttl must be a positive, finite number of seconds, not 0"),
    ({"ttl": float("nan")}, "not nan"),
    ({"ttl": float("inf")}, "not inf"),
    ({"lease": -1}, "lease must be"),
    ({"lease": True}, "not True"),
    ({"lease": "30"}, "not '30'"),
    ({"maxlen": 0}, "maxlen must be a positive int or None, not 0"),
    ({"maxlen": 1.5}, "maxlen must be"),
    ({"batch": 0}, "batch must be a positive int, not 0"),
    ({"backlog": 1.5}, "backlog must be"),
    ({"page_bytes": "1"}, "page_bytes must be"),
]


@pytest.mark.parametrize(("bad", "says"), BAD, ids=[repr(b) for b, _ in BAD])
def test_an_option_that_is_not_one_is_named(bad: dict[str, Any], says: str) -> None:
    with pytest.raises(ValueError, match=next(iter(bad))) as info:
        Options(**{**DEFAULTS, **bad})
    assert says in str(info.value)


@pytest.mark.anyio
@pytest.mark.parametrize(("bad", "says"), BAD, ids=[repr(b) for b, _ in BAD])
async def test_each_store_checks_them_at_once(kit: Kit, bad: dict[str, Any], says: str) -> None:
    with pytest.raises(ValueError, match=next(iter(bad))):
        kit.store(**bad)
