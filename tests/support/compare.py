"""Comparing what two implementations did: exact equality (types, key order, float
bits) and outcomes (value or exception with every attribute, plus warnings)."""

from __future__ import annotations

import struct
import warnings
from collections.abc import Callable
from typing import Any


def same(a: Any, b: Any) -> bool:
    """Deep equality that also holds types, dict key order and float bits
    (NaN, -0.0), without recursion (values nest up to 10000 levels)."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, dict):
            if list(x) != list(y):
                return False
            stack.extend(zip(x.values(), y.values(), strict=True))
        elif isinstance(x, list):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y, strict=True))
        elif isinstance(x, float):
            if struct.pack("<d", x) != struct.pack("<d", y):
                return False
        elif x != y:
            return False
    return True


def clone(value: Any) -> Any:
    """A copy of the dicts and lists in a JSON value, without recursion."""
    root: list[Any] = [value]
    stack = [(root, 0)]
    while stack:
        parent, key = stack.pop()
        item = parent[key]
        if isinstance(item, dict):
            parent[key] = dict(item)
            stack.extend((parent[key], k) for k in item)
        elif isinstance(item, list):
            parent[key] = list(item)
            stack.extend((parent[key], i) for i in range(len(item)))
    return root[0]


def outcome(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, ...]:
    """What a call did: returned (value) or raised (class, args, attributes),
    plus the warnings it issued."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = fn(*args, **kwargs)
        except Exception as exc:
            result: tuple[Any, ...] = ("raised", type(exc), exc.args, dict(vars(exc)))
        else:
            result = ("returned", value)
    return result, [(w.category, str(w.message)) for w in caught]


def assert_same_outcome(
    fast_fn: Callable[..., Any], pure_fn: Callable[..., Any], *args: Any, **kwargs: Any
) -> tuple[Any, ...]:
    got = outcome(fast_fn, *args, **kwargs)
    want = outcome(pure_fn, *args, **kwargs)
    (g, g_warn), (w, w_warn) = got, want
    assert g[0] == w[0], f"fast {g[:3]!r}\npure {w[:3]!r}"
    if g[0] == "returned":
        assert same(g[1], w[1]), f"fast {g[1]!r}\npure {w[1]!r}"
    else:
        assert g[1:] == w[1:]
    assert g_warn == w_warn
    return want
