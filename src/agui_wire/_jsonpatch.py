"""JSON Pointer (RFC 6901) and JSON Patch (RFC 6902), for checking AG-UI deltas.

Strategy: ``apply_patch(doc, ops)`` applies the operations in order to a copy of
``doc`` and returns the new document; the input is never mutated. Containers on
the path being changed are copied (copy-on-write), so one application costs the
size of the touched containers, not of the document. A patch that does not apply
raises ``PatchError`` naming the operation index, its JSON pointer (``/k/path``
inside the patch) and why; the patch is atomic: nothing is returned half-applied.

Contract (RFC 6902 §4-5, RFC 6901):

* pointers are ``""`` (the whole document) or ``/``-prefixed tokens with ``~1``
  for ``/`` and ``~0`` for ``~`` (a ``~`` followed by anything else is an error);
* array indices are ``0`` or digits without a leading zero; ``-`` names the slot
  past the end and is valid only as the last token of an ``add`` target (and of
  a ``move``/``copy`` target, which add); ``add`` may insert at ``len(array)``;
* ``add`` creates or replaces an object member and inserts into arrays; the
  parent must exist. ``remove``/``replace`` need an existing target. ``move`` may
  not move a value into one of its own children. ``test`` compares with JSON
  equality: numbers by value (``1 == 1.0``) but never booleans with numbers,
  objects regardless of key order;
* ``add``/``replace``/``test`` need ``value`` (``None`` is JSON null, a value);
  ``move``/``copy`` need ``from``; an unknown ``op`` is an error. Members an
  operation does not define are ignored (RFC 6902 §4).

The reference client applies deltas with ``fast-json-patch`` (``validate=true``),
which follows the same rules for the patches AG-UI producers write.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from typing import Any, Final

from ._jsonnames import a_json_type, json_excerpt, json_type
from .errors import PatchError, PointerError

__all__ = [
    "apply_patch",
    "json_equal",
    "parse_pointer",
    "resolve",
]

_INDEX: Final = re.compile(r"0|[1-9][0-9]*")
_MISSING: Final = object()


def parse_pointer(pointer: str) -> list[str]:
    """The reference tokens of a JSON pointer, unescaped; ``PointerError`` if invalid."""
    if not isinstance(pointer, str):
        raise PointerError(f"a JSON pointer is a string, not {type(pointer).__name__}")
    if pointer == "":
        return []
    if pointer[0] != "/":
        raise PointerError(f"{pointer!r} does not start with '/'")
    tokens = pointer[1:].split("/")
    for token in tokens:
        at = token.find("~")
        while at >= 0:
            if token[at + 1 : at + 2] not in ("0", "1"):
                raise PointerError(f"{pointer!r}: '~' must be followed by 0 or 1")
            at = token.find("~", at + 2)
    return [t.replace("~1", "/").replace("~0", "~") if "~" in t else t for t in tokens]


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality (RFC 6902 §4.6): by value, booleans never equal numbers."""
    ka, kb = json_type(a), json_type(b)
    if ka != kb:
        return False
    if ka == "array":
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if ka == "object":
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return bool(a == b)


def _array_index(token: str, size: int, *, end_ok: bool, pointer: str) -> int:
    if token == "-" and end_ok:
        return size
    if not _INDEX.fullmatch(token):
        raise PatchError(f"{pointer!r}: {token!r} is not an array index")
    index = int(token)
    if index > size or (index == size and not end_ok):
        raise PatchError(f"{pointer!r}: index {index} is out of bounds (array of {size})")
    return index


def resolve(doc: Any, pointer: str) -> Any:
    """The value ``pointer`` names in ``doc``; ``PatchError`` if it names nothing."""
    value = doc
    for token in parse_pointer(pointer):
        if isinstance(value, dict):
            if token not in value:
                raise PatchError(f"{pointer!r}: no member {token!r}")
            value = value[token]
        elif isinstance(value, list):
            value = value[_array_index(token, len(value), end_ok=False, pointer=pointer)]
        else:
            raise PatchError(f"{pointer!r}: cannot descend into a {json_type(value)}")
    return value


class _Doc:
    """The document being patched, with copy-on-write of the containers it changes."""

    __slots__ = ("owned", "root")

    def __init__(self, root: Any) -> None:
        self.root = root
        # containers already copied, by id (held, so an id is never reused)
        self.owned: dict[int, Any] = {}

    def _own(self, value: Any) -> Any:
        if id(value) in self.owned:
            return value
        copied = dict(value) if isinstance(value, dict) else list(value)
        self.owned[id(copied)] = copied
        return copied

    def parent(self, tokens: list[str], pointer: str) -> Any:
        """The container holding the last token, copied along the way."""
        self.root = node = self._own(self.root)
        for token in tokens[:-1]:
            key: str | int
            if isinstance(node, dict):
                if token not in node:
                    raise PatchError(f"{pointer!r}: no member {token!r}")
                key = token
            elif isinstance(node, list):
                key = _array_index(token, len(node), end_ok=False, pointer=pointer)
            else:
                raise PatchError(f"{pointer!r}: cannot descend into a {json_type(node)}")
            child = node[key]
            if not isinstance(child, (dict, list)):
                raise PatchError(f"{pointer!r}: cannot descend into a {json_type(child)}")
            child = self._own(child)
            node[key] = child
            node = child
        return node

    def add(self, pointer: str, value: Any) -> None:
        tokens = parse_pointer(pointer)
        if not tokens:
            self.root = value
            return
        if not isinstance(self.root, (dict, list)):
            raise PatchError(f"{pointer!r}: cannot descend into a {json_type(self.root)}")
        node = self.parent(tokens, pointer)
        last = tokens[-1]
        if isinstance(node, dict):
            node[last] = value
        elif isinstance(node, list):
            node.insert(_array_index(last, len(node), end_ok=True, pointer=pointer), value)
        else:
            raise PatchError(f"{pointer!r}: cannot add into a {json_type(node)}")

    def remove(self, pointer: str) -> Any:
        tokens = parse_pointer(pointer)
        if not tokens:
            raise PatchError("cannot remove the whole document")
        if not isinstance(self.root, (dict, list)):
            raise PatchError(f"{pointer!r}: cannot descend into a {json_type(self.root)}")
        node = self.parent(tokens, pointer)
        last = tokens[-1]
        if isinstance(node, dict):
            if last not in node:
                raise PatchError(f"{pointer!r}: no member {last!r} to remove")
            return node.pop(last)
        if isinstance(node, list):
            return node.pop(_array_index(last, len(node), end_ok=False, pointer=pointer))
        raise PatchError(f"{pointer!r}: cannot remove from a {json_type(node)}")

    def replace(self, pointer: str, value: Any) -> None:
        tokens = parse_pointer(pointer)
        if not tokens:
            self.root = value
            return
        if not isinstance(self.root, (dict, list)):
            raise PatchError(f"{pointer!r}: cannot descend into a {json_type(self.root)}")
        node = self.parent(tokens, pointer)
        last = tokens[-1]
        if isinstance(node, dict):
            if last not in node:
                raise PatchError(f"{pointer!r}: no member {last!r} to replace")
            node[last] = value
        elif isinstance(node, list):
            node[_array_index(last, len(node), end_ok=False, pointer=pointer)] = value
        else:
            raise PatchError(f"{pointer!r}: cannot replace inside a {json_type(node)}")


def _required(op: dict[str, Any], key: str) -> Any:
    if key not in op:
        raise PatchError(f"'{op['op']}' needs a {key!r} member")
    return op[key]


def apply_patch(doc: Any, patch: Sequence[Any] | Any) -> Any:
    """``doc`` with ``patch`` applied (see the module doc); ``doc`` is not modified."""
    if not isinstance(patch, (list, tuple)):
        raise PatchError(f"a JSON Patch is an array of operations, not {a_json_type(patch)}")
    target = _Doc(doc)
    for i, op in enumerate(patch):
        try:
            if not isinstance(op, dict):
                raise PatchError(f"an operation is an object, not {a_json_type(op)}")
            name = op.get("op")
            path = op.get("path")
            if not isinstance(path, str):
                raise PatchError("'path' must be a JSON pointer string")
            if name == "add":
                target.add(path, copy.deepcopy(_required(op, "value")))
            elif name == "remove":
                target.remove(path)
            elif name == "replace":
                target.replace(path, copy.deepcopy(_required(op, "value")))
            elif name in ("move", "copy"):
                source = _required(op, "from")
                if not isinstance(source, str):
                    raise PatchError("'from' must be a JSON pointer string")
                value = resolve(target.root, source)
                if name == "move":
                    if path != source and path.startswith(source + "/"):
                        raise PatchError(f"cannot move {source!r} into its own child {path!r}")
                    if path == source:
                        continue
                    target.remove(source)
                else:
                    value = copy.deepcopy(value)
                target.add(path, value)
            elif name == "test":
                expected = _required(op, "value")
                actual = resolve(target.root, path)
                if not json_equal(actual, expected):
                    raise PatchError(
                        f"test failed: {path!r} is {json_excerpt(actual, 60)}, "
                        f"not {json_excerpt(expected, 60)}"
                    )
            else:
                raise PatchError(f"unknown op {name!r}")
        except PointerError as exc:
            raise PatchError(str(exc), i, op) from None
        except PatchError as exc:
            if exc.index is not None:
                raise
            raise PatchError(exc.reason, i, op) from None
    return target.root
