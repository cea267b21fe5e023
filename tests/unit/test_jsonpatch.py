"""agui_wire._jsonpatch through its API: RFC 6902 (JSON Patch) and RFC 6901 (JSON Pointer).

The appendix A examples of RFC 6902, then the edges a delta can hit: pointer
escaping (``~0``, ``~1``, their order), the ``-`` index, indices with leading
zeros or signs, ``test`` under JSON equality (``1`` is ``1.0``, never ``true``),
``move`` into its own child, ``copy`` independence, ``remove`` of what is not
there, atomic failure, and the typed errors (``PatchError`` with the failing
operation's ``index`` and ``op``, ``PointerError``) from ``agui_wire.errors``.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from agui_wire._jsonpatch import apply_patch, json_equal, parse_pointer, resolve
from agui_wire.errors import AguiWireError, PatchError, PointerError


@pytest.mark.parametrize(
    ("doc", "patch", "expected"),
    [
        # RFC 6902 appendix A
        (
            {"foo": "bar"},
            [{"op": "add", "path": "/baz", "value": "qux"}],
            {"baz": "qux", "foo": "bar"},
        ),
        (
            {"foo": ["bar", "baz"]},
            [{"op": "add", "path": "/foo/1", "value": "qux"}],
            {"foo": ["bar", "qux", "baz"]},
        ),
        ({"baz": "qux", "foo": "bar"}, [{"op": "remove", "path": "/baz"}], {"foo": "bar"}),
        (
            {"foo": ["bar", "qux", "baz"]},
            [{"op": "remove", "path": "/foo/1"}],
            {"foo": ["bar", "baz"]},
        ),
        (
            {"baz": "qux", "foo": "bar"},
            [{"op": "replace", "path": "/baz", "value": "boo"}],
            {"baz": "boo", "foo": "bar"},
        ),
        (
            {"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
            [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}],
            {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}},
        ),
        (
            {"foo": ["all", "grass", "cows", "eat"]},
            [{"op": "move", "from": "/foo/1", "path": "/foo/3"}],
            {"foo": ["all", "cows", "eat", "grass"]},
        ),
        (
            {"baz": "qux", "foo": ["a", 2, "c"]},
            [
                {"op": "test", "path": "/baz", "value": "qux"},
                {"op": "test", "path": "/foo/1", "value": 2},
            ],
            {"baz": "qux", "foo": ["a", 2, "c"]},
        ),
        (
            {"foo": "bar"},
            [{"op": "add", "path": "/child", "value": {"grandchild": {}}}],
            {"foo": "bar", "child": {"grandchild": {}}},
        ),
        (
            {"foo": "bar"},
            [{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}],
            {"foo": "bar", "baz": "qux"},
        ),
        (
            {"foo": ["bar"]},
            [{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}],
            {"foo": ["bar", ["abc", "def"]]},
        ),
        ({"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": 10}], {"/": 9, "~1": 10}),
        ({"foo": None}, [{"op": "test", "path": "/foo", "value": None}], {"foo": None}),
        (
            {"a": {"b": 1}},
            [
                {"op": "copy", "from": "/a", "path": "/c"},
                {"op": "replace", "path": "/c/b", "value": 2},
            ],
            {"a": {"b": 1}, "c": {"b": 2}},
        ),
        ({"a": 1}, [{"op": "replace", "path": "", "value": [1]}], [1]),
        ({"n": 1}, [{"op": "test", "path": "/n", "value": 1.0}], {"n": 1}),
    ],
)
def test_apply_patch(doc, patch, expected) -> None:
    before = orjson.dumps(doc)
    assert apply_patch(doc, patch) == expected
    assert orjson.dumps(doc) == before  # never mutated


@pytest.mark.parametrize(
    ("doc", "patch", "reason"),
    [
        ({"foo": "bar"}, [{"op": "add", "path": "/baz/bat", "value": "qux"}], "no member 'baz'"),
        ({"baz": "qux"}, [{"op": "test", "path": "/baz", "value": "bar"}], "test failed"),
        ({"foo": ["bar", "baz"]}, [{"op": "add", "path": "/foo/3", "value": 1}], "out of bounds"),
        ({"foo": [1]}, [{"op": "add", "path": "/foo/01", "value": 1}], "not an array index"),
        ({"foo": 1}, [{"op": "test", "path": "/foo", "value": True}], "test failed"),
        ({"a": {}}, [{"op": "move", "from": "/a", "path": "/a/b"}], "own child"),
        ({}, [{"op": "remove", "path": "/x"}], "no member 'x'"),
        ({}, [{"op": "frob", "path": "/x"}], "unknown op"),
        ({}, [{"op": "add", "path": "/x"}], "needs a 'value'"),
        ({"a": [1]}, [{"op": "replace", "path": "/a/-", "value": 1}], "not an array index"),
    ],
)
def test_patch_errors(doc, patch, reason) -> None:
    with pytest.raises(PatchError, match=reason) as info:
        apply_patch(doc, patch)
    assert info.value.index == 0


# -- RFC 6901: pointers ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pointer", "tokens"),
    [
        ("", []),  # the whole document
        ("/", [""]),  # the member named ""
        ("//", ["", ""]),
        ("/a~1b", ["a/b"]),
        ("/m~0n", ["m~n"]),
        ("/~01", ["~1"]),  # ~0 first: "~01" is "~" then "1", never "/"
        ("/~10", ["/0"]),
        ("/~0~1~1~0", ["~//~"]),
        ("/a%20b/ é ", ["a%20b", " é "]),  # no URI-fragment decoding, spaces kept
    ],
)
def test_pointer_tokens(pointer: str, tokens: list[str]) -> None:
    assert parse_pointer(pointer) == tokens


@pytest.mark.parametrize("pointer", ["a", "a/b", "/~2", "/~", "/a~", "/~a", "/ok/~3"])
def test_pointer_syntax_errors(pointer: str) -> None:
    with pytest.raises(PointerError, match=r"'~' must be followed|does not start with '/'"):
        parse_pointer(pointer)


def test_pointer_is_a_string() -> None:
    with pytest.raises(PointerError, match="a JSON pointer is a string, not int"):
        parse_pointer(5)  # type: ignore[arg-type]


def test_resolve() -> None:
    doc = {"a": [{"b": 2}], "": {"": 3}, "0": "key"}
    assert resolve(doc, "") is doc
    assert resolve(doc, "/a/0/b") == 2
    assert resolve(doc, "//") == 3
    assert resolve(doc, "/0") == "key"  # a digit token on an object is a member name
    for pointer, reason in [
        ("/a/1", "out of bounds"),
        ("/a/-", "not an array index"),  # "-" names nothing to read
        ("/a/0/b/c", "cannot descend into a number"),
        ("/missing", "no member 'missing'"),
    ]:
        with pytest.raises(PatchError, match=reason):
            resolve(doc, pointer)


# -- array indices ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/a/0", [9, 1, 2]),
        ("/a/1", [1, 9, 2]),
        ("/a/2", [1, 2, 9]),  # add may insert at len(array)
        ("/a/-", [1, 2, 9]),  # "-": past the end
    ],
)
def test_add_into_arrays(path: str, expected: list[int]) -> None:
    assert apply_patch({"a": [1, 2]}, [{"op": "add", "path": path, "value": 9}]) == {"a": expected}


@pytest.mark.parametrize(
    ("op", "reason"),
    [
        ({"op": "add", "path": "/a/3", "value": 9}, "index 3 is out of bounds"),
        ({"op": "add", "path": "/a/01", "value": 9}, "'01' is not an array index"),
        ({"op": "add", "path": "/a/00", "value": 9}, "'00' is not an array index"),
        ({"op": "add", "path": "/a/-1", "value": 9}, "'-1' is not an array index"),
        ({"op": "add", "path": "/a/+1", "value": 9}, r"'\+1' is not an array index"),
        ({"op": "add", "path": "/a/1e0", "value": 9}, "'1e0' is not an array index"),
        ({"op": "add", "path": "/a/ 1", "value": 9}, "' 1' is not an array index"),
        ({"op": "add", "path": "/a/-/x", "value": 9}, "'-' is not an array index"),
        ({"op": "replace", "path": "/a/2", "value": 9}, "index 2 is out of bounds"),
        ({"op": "replace", "path": "/a/-", "value": 9}, "'-' is not an array index"),
        ({"op": "remove", "path": "/a/2"}, "index 2 is out of bounds"),
        ({"op": "remove", "path": "/a/-"}, "'-' is not an array index"),
        ({"op": "test", "path": "/a/-", "value": 9}, "'-' is not an array index"),
        ({"op": "copy", "from": "/a/-", "path": "/b"}, "'-' is not an array index"),
    ],
)
def test_bad_array_indices(op: dict[str, Any], reason: str) -> None:
    with pytest.raises(PatchError, match=reason) as info:
        apply_patch({"a": [1, 2]}, [op])
    assert (info.value.index, info.value.op) == (0, op)


def test_leading_zero_is_fine_as_a_member_name() -> None:
    doc = {"01": "x"}
    assert apply_patch(doc, [{"op": "replace", "path": "/01", "value": "y"}]) == {"01": "y"}
    assert apply_patch(doc, [{"op": "add", "path": "/-", "value": 1}]) == {"01": "x", "-": 1}


# -- test: JSON equality ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("actual", "expected", "equal"),
    [
        (1, 1.0, True),  # numbers by value
        (0, -0.0, True),
        (1, True, False),  # booleans never equal numbers
        (0, False, False),
        (None, False, False),
        ("1", 1, False),
        ([1, 2], [1.0, 2.0], True),
        ([1, 2], [2, 1], False),  # arrays in order
        ([1], [1, 1], False),
        ({"x": 1, "y": [True]}, {"y": [True], "x": 1.0}, True),  # objects in any order
        ({"x": 1}, {"x": 1, "y": None}, False),  # a null member is still a member
        ({"x": [0]}, {"x": [False]}, False),
    ],
)
def test_json_equality(actual: Any, expected: Any, equal: bool) -> None:
    assert json_equal(actual, expected) is equal
    patch = [{"op": "test", "path": "/v", "value": expected}]
    if equal:
        assert apply_patch({"v": actual}, patch) == {"v": actual}
    else:
        with pytest.raises(PatchError, match="test failed: '/v' is"):
            apply_patch({"v": actual}, patch)


def test_test_of_a_missing_member_fails_even_for_null() -> None:
    with pytest.raises(PatchError, match="no member 'gone'"):
        apply_patch({}, [{"op": "test", "path": "/gone", "value": None}])


# -- move, copy, remove -----------------------------------------------------------------------


def test_move() -> None:
    doc = {"a": {"b": 1}, "l": [1, 2, 3]}
    # into its own child: refused (the value would contain itself)
    with pytest.raises(PatchError, match="cannot move '/a' into its own child '/a/b/c'"):
        apply_patch(doc, [{"op": "move", "from": "/a", "path": "/a/b/c"}])
    # a sibling whose name starts with the source's is not a child
    assert apply_patch({"a": 1}, [{"op": "move", "from": "/a", "path": "/ab"}]) == {"ab": 1}
    # onto itself: nothing changes
    assert apply_patch(doc, [{"op": "move", "from": "/a", "path": "/a"}]) == doc
    # into its parent's place: the parent is replaced by the child
    assert apply_patch(doc, [{"op": "move", "from": "/a/b", "path": "/a"}])["a"] == 1
    # within one array: removed first, then added at the index of the shorter array
    assert apply_patch(doc, [{"op": "move", "from": "/l/0", "path": "/l/-"}])["l"] == [2, 3, 1]
    assert apply_patch(doc, [{"op": "move", "from": "/l/0", "path": "/l/2"}])["l"] == [2, 3, 1]
    with pytest.raises(PatchError, match="index 3 is out of bounds"):
        apply_patch(doc, [{"op": "move", "from": "/l/0", "path": "/l/3"}])
    with pytest.raises(PatchError, match="no member 'x'"):
        apply_patch(doc, [{"op": "move", "from": "/x", "path": "/y"}])


def test_copy_is_independent() -> None:
    doc = {"a": {"b": [1]}}
    out = apply_patch(
        doc,
        [
            {"op": "copy", "from": "/a", "path": "/c"},
            {"op": "add", "path": "/c/b/-", "value": 2},
            {"op": "copy", "from": "/a/b/0", "path": "/a/b/0"},  # copy onto an index: inserts
        ],
    )
    assert out == {"a": {"b": [1, 1]}, "c": {"b": [1, 2]}}
    assert doc == {"a": {"b": [1]}}


@pytest.mark.parametrize(
    ("doc", "path", "reason"),
    [
        ({}, "/x", "no member 'x' to remove"),
        ({"a": {}}, "/a/x", "no member 'x' to remove"),
        ({"a": {}}, "/b/x", "no member 'b'"),
        ({"a": []}, "/a/0", "index 0 is out of bounds"),
        ({"a": 1}, "", "cannot remove the whole document"),
        ({"a": "s"}, "/a/0", "cannot descend into a string"),
    ],
)
def test_remove_of_what_is_not_there(doc: Any, path: str, reason: str) -> None:
    with pytest.raises(PatchError, match=reason):
        apply_patch(doc, [{"op": "remove", "path": path}])


def test_whole_document() -> None:
    assert apply_patch({"a": 1}, [{"op": "add", "path": "", "value": None}]) is None
    assert apply_patch(None, [{"op": "replace", "path": "", "value": {"x": 1}}]) == {"x": 1}
    assert apply_patch(3, [{"op": "test", "path": "", "value": 3.0}]) == 3
    with pytest.raises(PatchError, match="cannot descend into a number"):
        apply_patch(3, [{"op": "add", "path": "/x", "value": 1}])


# -- atomicity, copies and errors --------------------------------------------------------------


def test_a_failing_patch_changes_nothing_and_names_its_operation() -> None:
    doc = {"a": {"b": [1, 2]}, "n": 1}
    before = copy.deepcopy(doc)
    ops = [
        {"op": "replace", "path": "/n", "value": 2},
        {"op": "add", "path": "/a/b/-", "value": 3},
        {"op": "remove", "path": "/a/x"},
    ]
    with pytest.raises(PatchError) as info:
        apply_patch(doc, ops)
    assert doc == before  # nothing half-applied, the input untouched
    error = info.value
    assert (error.index, error.op) == (2, ops[2])
    assert error.reason == "'/a/x': no member 'x' to remove"
    assert str(error) == "operation 2 (remove '/a/x'): '/a/x': no member 'x' to remove"
    assert isinstance(error, AguiWireError)
    assert isinstance(error, ValueError)


def test_values_are_copied_in_and_untouched_parts_are_shared() -> None:
    value = {"deep": [1]}
    doc = {"kept": {"big": [0] * 10}, "changed": {}}
    out = apply_patch(doc, [{"op": "add", "path": "/changed/v", "value": value}])
    value["deep"].append(2)
    assert out["changed"]["v"] == {"deep": [1]}
    assert doc == {"kept": {"big": [0] * 10}, "changed": {}}
    assert out["kept"] is doc["kept"]  # copy-on-write: only the path changed is copied


@pytest.mark.parametrize(
    ("patch", "index", "reason"),
    [
        ({"op": "add"}, None, "a JSON Patch is an array of operations, not an object"),
        ("[]", None, "not a string"),
        ([5], 0, "an operation is an object, not a number"),
        ([[]], 0, "an operation is an object, not an array"),
        ([{"path": "/x", "value": 1}], 0, "unknown op None"),
        ([{"op": "add", "value": 1}], 0, "'path' must be a JSON pointer string"),
        ([{"op": "add", "path": 5, "value": 1}], 0, "'path' must be a JSON pointer string"),
        ([{"op": "add", "path": "x", "value": 1}], 0, "'x' does not start with '/'"),
        ([{"op": "replace", "path": "/x"}], 0, "'replace' needs a 'value' member"),
        ([{"op": "test", "path": "/x"}], 0, "'test' needs a 'value' member"),
        ([{"op": "move", "path": "/x"}], 0, "'move' needs a 'from' member"),
        ([{"op": "copy", "from": 1, "path": "/x"}], 0, "'from' must be a JSON pointer string"),
        ([{"op": "copy", "from": "/~9", "path": "/x"}], 0, "'~' must be followed by 0 or 1"),
        ([{"op": "ADD", "path": "/x", "value": 1}], 0, "unknown op 'ADD'"),
    ],
)
def test_malformed_patches(patch: Any, index: int | None, reason: str) -> None:
    with pytest.raises(PatchError) as info:
        apply_patch({"x": 0}, patch)
    # a bad pointer inside an operation is that operation's PatchError, not a PointerError
    assert type(info.value) is PatchError
    assert info.value.index == index
    assert reason in str(info.value)


def test_unknown_members_are_ignored_and_null_is_a_value() -> None:
    patch = [{"op": "add", "path": "/x", "value": None, "from": 5, "extra": [1]}]
    assert apply_patch({}, patch) == {"x": None}
    patch = [{"op": "remove", "path": "/x", "value": "ignored"}]
    assert apply_patch({"x": 1}, patch) == {}
