"""One public name, one thing: no two public classes of the package share a name.

A user who reads ``EventEncoder`` in a traceback, a log or the docs must know which
class it is; the package's public modules are read through their ``__all__``.
"""

from __future__ import annotations

import importlib

import pytest

PUBLIC = (
    "agui_wire",
    "agui_wire.asgi",
    "agui_wire.client",
    "agui_wire.compat",
    "agui_wire.errors",
    "agui_wire.redis",
    "agui_wire.validate",
)


def test_no_two_public_classes_share_a_name() -> None:
    owners: dict[str, dict[int, str]] = {}
    for name in PUBLIC:
        try:
            module = importlib.import_module(name)
        except ImportError as exc:  # an extra not installed
            pytest.skip(f"{name}: {exc}")
        for attr in module.__all__:
            value = getattr(module, attr)
            if isinstance(value, type):
                owners.setdefault(value.__name__, {})[id(value)] = f"{name}.{attr}"
    shared = {n: sorted(where.values()) for n, where in owners.items() if len(where) > 1}
    assert shared == {}
