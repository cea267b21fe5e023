"""The C twins stand alone: no name reaches a .pxi through include order.

``_fast.pyx`` includes ``_codec/_common.pxi`` and then every C twin ``_codec/_X.pxi``
(or the parts ``_X_<part>.pxi`` of one twin) into one Cython module, so a name one file
defines is visible to every file included after it: an import, a cimport or a helper
could be borrowed by accident and break the day the includes are reordered. Each file is
read alone here (``pxi_scan``: Cython's parser, no compile, ~1 s for all) and every name
it reads from module scope must come from the file itself, from ``_common.pxi``, from
another part of its own twin (not that part's imports: each file imports for itself), or
from a ``# uses _Y.pxi: name, ...`` line naming another twin's C definition, which
``_fast.pyx`` must include first. The checks are shown to fail on a planted dependency.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

pytest.importorskip("Cython")

from .pxi_scan import BUILTINS, Scan, scan

ROOT = Path(__file__).resolve().parents[2]
CODEC = ROOT / "src" / "agui_wire" / "_codec"
FAST = ROOT / "src" / "agui_wire" / "_fast.pyx"
COMMON = "_common.pxi"


def twin(name: str) -> str:
    """The twin a .pxi belongs to ("_proto_writer" for _proto_writer_json.pxi): the
    longest prefix with a pure module X.py beside it."""
    stem = name.removesuffix(".pxi")
    parts = stem.split("_")
    for n in range(len(parts), 1, -1):
        prefix = "_".join(parts[:n])
        if (CODEC / (prefix[1:] + ".py")).exists():
            return prefix
    raise AssertionError(f"{name}: no pure twin X.py for it in _codec/")


def included() -> list[str]:
    text = FAST.read_text()
    return re.findall(r'^include "_codec/(\w+\.pxi)"$', text, re.M)


@cache
def scans() -> dict[str, Scan]:
    return {p.name: scan(p) for p in sorted(CODEC.glob("*.pxi"))}


def problems(name: str, found: dict[str, Scan]) -> list[str]:
    """What file `name` reads that it does not define, import or declare."""
    me = found[name]
    mine = twin(name) if name != COMMON else None
    allowed = set(BUILTINS) | found[COMMON].defined
    for other, s in found.items():
        if other != name and other != COMMON and twin(other) == mine:
            allowed |= s.own  # a part of the same twin: its definitions, not its imports
    declared: dict[str, str] = {}
    for prefix, names in me.uses.items():
        for n in names:
            declared[n] = prefix
    out = []
    for n, line in sorted(me.free.items(), key=lambda item: item[1]):
        if n not in allowed and n not in declared:
            owners = [o for o, s in found.items() if o != name and n in s.defined]
            hint = f" (defined in {', '.join(owners)})" if owners else ""
            out.append(f"{name}:{line}: {n} is neither defined, imported nor declared{hint}")
    order = included()
    for n, prefix in sorted(declared.items()):
        givers = [o for o, s in found.items() if o != COMMON and twin(o) == prefix and n in s.own]
        if not givers:
            out.append(f"{name}: `# uses {prefix}*.pxi: {n}`: no part of {prefix} defines {n}")
        elif n not in me.free:
            out.append(f"{name}: `# uses {prefix}*.pxi: {n}`: declared but not used")
        elif name in order and any(order.index(g) > order.index(name) for g in givers):
            out.append(f"{name}: uses {n} from {givers[0]}, which _fast.pyx includes after it")
    return out


def test_fast_pyx_includes_common_first_then_every_twin_once() -> None:
    order = included()
    assert order[0] == COMMON
    assert sorted(order) == sorted(scans()), "every .pxi in _codec/ is included, once"
    twins = [twin(n) for n in order[1:]]
    # the parts of one twin sit together, in the order a reviewer reads them
    assert [t for i, t in enumerate(twins) if i == 0 or twins[i - 1] != t] == list(
        dict.fromkeys(twins)
    )


@pytest.mark.parametrize("name", sorted(p.name for p in CODEC.glob("*.pxi")))
def test_each_pxi_stands_alone(name: str) -> None:
    assert problems(name, scans()) == []


def test_no_module_name_is_defined_twice() -> None:
    """Two files defining one name: Cython refuses a cdef clash, but a second `def` or
    module-level assignment would silently replace the first."""
    owner: dict[str, str] = {}
    clashes = []
    for name, s in scans().items():
        for n in sorted(s.own):
            if n in owner:
                clashes.append(f"{n}: {owner[n]} and {name}")
            owner[n] = name
    assert clashes == []


def _with(name: str, text: str) -> dict[str, Scan]:
    found = dict(scans())
    found[name] = scan(CODEC / name, text)
    return found


def test_a_borrowed_import_fails() -> None:
    """An import of another twin's file, used as if it were this file's own: the SSE
    writer reading the seam that the protobuf writer's files import, without its own
    import of it."""
    name = "_sse_writer_entry.pxi"
    text = (CODEC / name).read_text()
    line = "from agui_wire._codec import seam as _seam\n"
    assert line in text
    found = _with(name, text.replace(line, ""))
    assert any("_seam is neither" in p for p in problems(name, found)), problems(name, found)


def test_a_borrowed_c_name_fails_unless_declared() -> None:
    """Another twin's C name is an error until a `# uses` line declares it, and then
    only if it exists."""
    name = "_sse_writer_entry.pxi"
    text = (CODEC / name).read_text()
    planted = text + '\ncdef object _SSE_PLANTED = _en_key("type")\n'
    assert any("_en_key is neither" in p for p in problems(name, _with(name, planted)))
    declared = "# uses _proto_writer.pxi: _en_key\n" + planted
    assert problems(name, _with(name, declared)) == []
    wrong = "# uses _proto_writer.pxi: _en_key, _en_nothing\n" + planted
    assert any(
        "no part of _proto_writer defines _en_nothing" in p
        for p in problems(name, _with(name, wrong))
    )


def test_a_local_or_a_global_declaration_is_told_apart() -> None:
    """A function's own names are not free; a `global` one is, as Python scopes them."""
    text = (
        "cdef int _fr_probe(int a) noexcept:\n"
        "    cdef int b = a\n"
        "    for c in range(b):\n"
        "        d = c\n"
        "    global _fr_elsewhere\n"
        "    _fr_elsewhere = d\n"
        "    return _fr_unknown + b\n"
    )
    s = scan(CODEC / "_framing.pxi", text)
    assert set(s.free) - BUILTINS == {"_fr_elsewhere", "_fr_unknown"}
