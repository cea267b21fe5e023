"""The two implementations of the codec, for the tests that run both side by side.

Strategy: ``fast(name)`` is ``agui_wire._fast`` when it provides ``name`` (imported
directly, whatever ``AGUI_WIRE_PURE`` says: these tests pick their implementation
themselves). Without it the Cython side is skipped, except under
``AGUI_WIRE_REQUIRE_FAST=1`` (make test's Cython pass, CI), where a missing extension
or name is an error at collection: a pass never tests the pure twin alone by accident.

Contract: ``twins(pure, name)`` are the pytest params ``python`` (the pure module) and
``cython``; ``needs_fast(name)`` marks a test that uses ``fast(name)`` itself;
``fast_or_skip(name)`` is for a module whose every test compares the two.
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import Any

import pytest

__all__ = ["fast", "fast_or_skip", "needs_fast", "required", "twins"]

_WHY = "agui_wire._fast not built (python setup.py build_ext --inplace)"


def required() -> bool:
    """Whether this pass must run the Cython twin (``AGUI_WIRE_REQUIRE_FAST``)."""
    return os.environ.get("AGUI_WIRE_REQUIRE_FAST", "") not in ("", "0")


def fast(name: str) -> ModuleType | None:
    """``agui_wire._fast`` if it provides ``name``; else None, or ``RuntimeError``
    when the pass requires it."""
    try:
        from agui_wire import _fast
    except ImportError:
        _fast = None  # type: ignore[assignment]
    if _fast is not None and hasattr(_fast, name):
        return _fast
    if required():
        raise RuntimeError(f"AGUI_WIRE_REQUIRE_FAST is set but agui_wire._fast has no {name}")
    return None


def twins(pure: ModuleType, name: str) -> list[Any]:
    """The params ``python`` (``pure``) and ``cython`` (``agui_wire._fast``, skipped
    when it lacks ``name`` and the pass does not require it)."""
    module = fast(name)
    return [
        pytest.param(pure, id="python"),
        pytest.param(module, id="cython", marks=pytest.mark.skipif(module is None, reason=_WHY)),
    ]


def needs_fast(name: str) -> pytest.MarkDecorator:
    """Skip the test when ``agui_wire._fast`` lacks ``name`` (an error when required)."""
    return pytest.mark.skipif(fast(name) is None, reason=_WHY)


def fast_or_skip(name: str) -> ModuleType:
    """``agui_wire._fast``, or the whole test module skipped when it lacks ``name``
    (an error when required)."""
    module = fast(name)
    if module is None:
        pytest.skip(_WHY, allow_module_level=True)
    return module
