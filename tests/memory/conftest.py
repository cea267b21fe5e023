"""The memory store's own tests: coroutines run by anyio's pytest plugin (asyncio)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"
