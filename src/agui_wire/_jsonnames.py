"""How error messages name JSON values and the places they sit.

``json_type`` names a Python value by its JSON type ("null", "boolean", "number",
"string", "array", "object"; tuples are arrays, as every encoder here writes
them), or by its Python type when JSON has none. ``json_pointer`` and
``pointer_join`` write RFC 6901 pointers, escaping ``~`` as ``~0`` and ``/`` as
``~1``. ``json_excerpt`` quotes a value as JSON, cut to a length a message can
hold. Every codec, the validator and the patcher use these, so an error names a
place the same way whichever of them raised it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

__all__ = ["a_json_type", "json_excerpt", "json_pointer", "json_type", "pointer_join"]


def json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__qualname__


def a_json_type(value: object) -> str:
    """``json_type`` with its article, for messages: "an array", "a string"."""
    kind = json_type(value)
    return f"{'an' if kind[:1] in ('a', 'e', 'i', 'o', 'u') else 'a'} {kind}"


def json_pointer(tokens: Iterable[str | int]) -> str:
    """The pointer of a path of keys and indices (``[]`` is the root, ``""``)."""
    return "".join("/" + str(t).replace("~", "~0").replace("/", "~1") for t in tokens)


def pointer_join(parent: str, key: str | int) -> str:
    """The pointer of ``key`` inside the value at ``parent``."""
    return parent + "/" + str(key).replace("~", "~0").replace("/", "~1")


def json_excerpt(value: object, limit: int) -> str:
    """``value`` as JSON (``repr`` when it is not JSON), at most ``limit`` characters."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
