"""``agui_wire._jsonpatch`` against the client's JSON Patch (fast-json-patch 3.1.1).

``@ag-ui/client`` applies ``STATE_DELTA`` and ``ACTIVITY_DELTA`` with
``applyPatch(doc, patch, validate=true, mutate=false)``; the validator's state
layer and the run store's fold (``RunState``) use ``apply_patch``. Both must
apply the same patches to the same result and refuse the same ones (the
reference's error ``index`` is 0 for most failures, so it is not compared): on
the edge cases of tests/unit/test_jsonpatch.py and on random multi-operation
patches. ``DIVERGENT`` lists where fast-json-patch departs from
RFC 6901/6902 and agui_wire keeps the RFC (asserted, so a change on either side
shows here).
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from agui_wire._jsonpatch import apply_patch
from agui_wire.errors import PatchError

pytestmark = pytest.mark.interop

Case = tuple[Any, list[Any]]

A = {"a": [1, 2]}
AGREE: list[Case] = [
    (A, [{"op": "add", "path": p, "value": 9}])
    for p in ("/a/0", "/a/2", "/a/-", "/a/3", "/a/-1", "/a/+1", "/a/1e0", "/a/ 1", "/a/-/x")
] + [
    (A, [{"op": "replace", "path": "/a/2", "value": 9}]),
    (A, [{"op": "replace", "path": "/a/-", "value": 9}]),
    (A, [{"op": "remove", "path": "/a/2"}]),
    (A, [{"op": "remove", "path": "/a/-"}]),
    (A, [{"op": "test", "path": "/a/-", "value": 9}]),
    (A, [{"op": "copy", "from": "/a/-", "path": "/b"}]),
    ({"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": 10}]),
    ({}, [{"op": "add", "path": "a", "value": 1}]),
    ({"v": 1}, [{"op": "test", "path": "/v", "value": True}]),
    ({"v": 0}, [{"op": "test", "path": "/v", "value": False}]),
    ({"v": 1}, [{"op": "test", "path": "/v", "value": 1.0}]),
    ({"v": {"x": 1, "y": None}}, [{"op": "test", "path": "/v", "value": {"x": 1}}]),
    ({"v": {"x": 1, "y": [2]}}, [{"op": "test", "path": "/v", "value": {"y": [2], "x": 1}}]),
    ({"v": [1, 2]}, [{"op": "test", "path": "/v", "value": [2, 1]}]),
    ({}, [{"op": "test", "path": "/gone", "value": None}]),
    ({"a": {"b": 1}}, [{"op": "move", "from": "/a", "path": "/a/b/c"}]),
    ({"a": 1}, [{"op": "move", "from": "/a", "path": "/ab"}]),
    ({"l": [1, 2, 3]}, [{"op": "move", "from": "/l/0", "path": "/l/2"}]),
    ({"x": 1}, [{"op": "move", "from": "/y", "path": "/z"}]),
    ({}, [{"op": "remove", "path": "/x"}]),
    ({"a": {}}, [{"op": "remove", "path": "/b/x"}]),
    ({"a": "s"}, [{"op": "remove", "path": "/a/0"}]),
    ({"a": 5}, [{"op": "add", "path": "/a/x", "value": 1}]),
    ({"a": 1}, [{"op": "add", "path": "", "value": None}]),
    ({"x": 0}, [{"op": "replace", "path": "/x"}]),
    ({"x": 0}, [{"op": "test", "path": "/x"}]),
    ({"x": 0}, [{"op": "move", "path": "/x"}]),
    ({"x": 0}, [{"op": "ADD", "path": "/x", "value": 1}]),
    ({"x": 0}, [{"op": "add", "value": 1}]),
    ({"x": 0}, [5]),
    ({"x": 0}, [{"op": "add", "path": "/y", "value": None}]),
    ({"x": 0}, [{"op": "add", "path": "/x/y/z", "value": 1}]),
    ({"x": []}, [{"op": "add", "path": "/x/0/z", "value": 1}]),
    ({"01": "x"}, [{"op": "replace", "path": "/01", "value": "y"}]),
    ({"x": 1}, [{"op": "replace", "path": "/x", "value": 2}, {"op": "remove", "path": "/q"}]),
]

# fast-json-patch applies these; agui_wire refuses them (with the RFC). Each: the
# case, and what the reference makes of it.
DIVERGENT: list[tuple[str, Case, Any]] = [
    # RFC 6901 §4: an index has no leading zeros; fast-json-patch reads "01" as 1
    ("leading zero", (A, [{"op": "add", "path": "/a/01", "value": 9}]), {"a": [1, 9, 2]}),
    ("zero twice", (A, [{"op": "add", "path": "/a/00", "value": 9}]), {"a": [9, 1, 2]}),
    # RFC 6901 §3: "~" is followed by 0 or 1; fast-json-patch keeps "~2" as it is
    ("bad escape", ({}, [{"op": "add", "path": "/~2", "value": 1}]), {"~2": 1}),
    # the whole document cannot be removed; fast-json-patch makes it null
    ("remove root", ({"a": 1}, [{"op": "remove", "path": ""}]), None),
    # a member of a number: fast-json-patch does nothing and reports nothing
    ("into a number", (3, [{"op": "add", "path": "/x", "value": 1}]), 3),
    # RFC 6902 §4.4: move is remove then add, so "/l/3" is past the end of the
    # two-element array left; fast-json-patch does not check the target index of
    # a move or a copy at all (past the end, it appends)
    # from a path that names nothing onto the root: fast-json-patch's document
    # becomes undefined (no "doc" in its answer)
    (
        "copy nothing to the root",
        ({"a": 1}, [{"op": "copy", "from": "/nope", "path": ""}]),
        "undefined",
    ),
    (
        "move to old end",
        ({"l": [1, 2, 3]}, [{"op": "move", "from": "/l/0", "path": "/l/3"}]),
        {"l": [2, 3, 1]},
    ),
    # RFC 6902 §4.4: a value cannot move into its own child; fast-json-patch
    # removes it, then adds into what took its place: into a number, nothing
    (
        "move into own child",
        ({"b": [{}, 1]}, [{"op": "move", "from": "/b/0", "path": "/b/0/a"}]),
        {"b": [1]},
    ),
    (
        "copy past the end",
        ({"l": [1, 2]}, [{"op": "copy", "from": "/l/0", "path": "/l/7"}]),
        {"l": [1, 2, 1]},
    ),
    (
        "move past the end",
        ({"l": [1, 2]}, [{"op": "move", "from": "/l/0", "path": "/l/5"}]),
        {"l": [2, 1]},
    ),
]


def ours(case: Case) -> tuple[Any, int | None, bool]:
    """(result, failing operation index, failed)."""
    doc, ops = case
    try:
        return apply_patch(doc, ops), None, False
    except PatchError as exc:
        return None, exc.index, True


def random_patch(rng: random.Random) -> Case:
    """A small document and up to four operations, each chosen against the document
    as the operations before it left it (paths that exist, and some that do not)."""

    def value(depth: int = 0) -> Any:
        kind = rng.randrange(6 if depth < 2 else 4)
        if kind == 0:
            return rng.randrange(-2, 3)
        if kind == 1:
            return rng.choice(["", "a", "~/"])
        if kind == 2:
            return rng.choice([True, False, None, 1.5])
        if kind == 3:
            return rng.choice([0, 1.0, "x"])
        if kind == 4:
            return [value(depth + 1) for _ in range(rng.randrange(3))]
        return {rng.choice(["a", "b", "~", "/"]): value(depth + 1) for _ in range(rng.randrange(3))}

    def escape(token: str) -> str:
        return token.replace("~", "~0").replace("/", "~1")

    def paths(node: Any, at: str = "") -> list[tuple[str, Any]]:
        out = [(at, node)]
        if isinstance(node, dict):
            for k, v in node.items():
                out += paths(v, f"{at}/{escape(k)}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                out += paths(v, f"{at}/{i}")
        return out

    doc = {"a": value(1), "b": [value(2), value(2)], "~/": value(1)}
    ops: list[Any] = []
    current: Any = doc
    for _ in range(rng.randrange(1, 5)):
        existing = paths(current)
        target, node = rng.choice(existing)
        containers = [(p, n) for p, n in existing if isinstance(n, (dict, list))]
        if not containers:
            break  # a scalar root: operations into it are DIVERGENT ("into a number")
        parent, holder = rng.choice(containers)
        if isinstance(holder, list):
            # fast-json-patch checks a move's index before the remove (DIVERGENT)
            new = f"{parent}/{rng.choice(['-', str(len(holder)), str(len(holder) + 1), '0'])}"
        else:
            new = f"{parent}/{escape(rng.choice(['a', 'new', '~', '/']))}"
        missing = f"{parent}/{'nope' if isinstance(holder, dict) else len(holder) + 2}"
        name = rng.choice(["add", "remove", "replace", "move", "copy", "test"])
        op: dict[str, Any] = {"op": name}
        if name == "add":
            op.update(path=rng.choice([new, target, missing]), value=value())
        elif name in ("remove", "replace"):
            op["path"] = rng.choice([target, target, missing])
            if name == "replace":
                op["value"] = value()
        elif name == "test":
            op.update(path=target, value=node if rng.random() < 0.6 else value())
        else:
            source = rng.choice([target, missing])
            # from nothing onto the root is DIVERGENT ("copy nothing to the root")
            op.update(path=rng.choice([new, target]) if source == target else new)
            op["from"] = source
            if op["path"] == new and isinstance(holder, list):
                # a target index past the end is DIVERGENT ("copy past the end")
                op["path"] = f"{parent}/{rng.choice(['-', '0'])}"
            if op["path"].startswith(f"{source}/"):
                # into its own child: DIVERGENT (sometimes); to the root instead
                op["path"] = "/-" if isinstance(current, list) else "/moved"
        if target == "" and name in ("remove",):
            op["path"] = missing  # removing the root: DIVERGENT
        ops.append(op)
        result, _, failed = ours((doc, ops))
        if failed:
            break
        current = result
    return doc, ops


def test_edge_cases_agree(node_harness) -> None:
    for case, reference in zip(AGREE, node_harness.patch(AGREE), strict=True):
        result, _, failed = ours(case)
        assert failed == (reference["error"] is not None), (case, reference)
        if not failed:
            assert result == reference["doc"], case


def test_known_divergences(node_harness) -> None:
    cases = [case for _, case, _ in DIVERGENT]
    for (name, case, expected), reference in zip(DIVERGENT, node_harness.patch(cases), strict=True):
        assert reference["error"] is None, (name, reference)
        assert reference.get("doc", "undefined") == expected, name
        assert ours(case)[2], name  # agui_wire refuses it


def test_random_patches_agree(node_harness) -> None:
    rng = random.Random(6902)
    cases = [random_patch(rng) for _ in range(3000)]
    failures = 0
    for case, reference in zip(cases, node_harness.patch(cases), strict=True):
        result, _, failed = ours(case)
        assert failed == (reference["error"] is not None), (case, reference)
        failures += failed
        if not failed:
            assert result == reference["doc"], case
    assert 300 < failures < 2700  # both outcomes well exercised
