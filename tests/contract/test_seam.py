"""The C/Python seam: the extension reaches Python only through the words of
``agui_wire._codec.seam`` (tests/contract/seam_contract.py, run by ``make lint``).

tests/contract/test_layers.py runs the linter itself on planted faults; here the check
is called directly on the extension's sources with one fault planted in memory, for
each way a ``.pxi`` could reach past the seam, so a route the check stops seeing fails
here by name.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("Cython")
pytest.importorskip("importlinter")

from .seam_contract import Seam, read_seam, seam_problems, sources

EXTENSION = "agui_wire._fast"
EXTERNAL = {"collections.abc", "mmap", "operator", "orjson", "sys", "warnings"}
FRAMING = "_codec/_framing.pxi"


@pytest.fixture(scope="module")
def seam() -> Seam:
    return read_seam("agui_wire._codec.seam", {"agui_wire.schema"})


def planted(text: str, where: str = FRAMING) -> dict[str, str]:
    files = sources(EXTENSION)
    files[where] += "\n" + text + "\n"
    return files


def test_the_extension_keeps_to_the_seam(seam: Seam) -> None:
    assert seam.modules == {"schema"}
    assert seam_problems(EXTENSION, seam, EXTERNAL) == []


def test_the_seam_is_what_the_pyproject_contract_names() -> None:

    import tomllib

    config = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["id"] == "seam"]
    assert contract["type"] == "extension_seam"
    assert (contract["extension"], contract["seam"]) == (EXTENSION, "agui_wire._codec.seam")
    assert set(contract["external_modules"]) == EXTERNAL


# (planted line(s), the fault the check must report)
ROUTES = {
    "a module of the package": (
        "from agui_wire import asgi as _fr_asgi",
        "imports agui_wire.asgi: the extension reaches the package only through",
    ),
    "a module of the package, relatively": ("from . import asgi", "imports agui_wire.asgi:"),
    "its pure twin": (
        "from agui_wire._codec import framing as _fr_py\ncdef object _FR_P = _fr_py._too_large",
        "imports agui_wire._codec.framing:",
    ),
    "a private name through the seam": (
        "cdef object _FR_P = _seam._too_large",
        "reads _too_large of agui_wire._codec.seam: a private name, not a word",
    ),
    "a name the seam does not declare": (
        "cdef object _FR_P = _seam.asgi",
        "reads asgi of agui_wire._codec.seam: not a word of its __all__",
    ),
    "a word imported by name": (
        "from agui_wire._codec.seam import frame_too_large as _fr_a, _EVENTS as _fr_b",
        "reads _EVENTS of agui_wire._codec.seam",
    ),
    "a private name of a module word": (
        "cdef object _FR_P = _seam.schema._TYPE_NAMES",
        "reads _TYPE_NAMES: a private name of a module word",
    ),
    "a private name of a module word, through a local": (
        "def _fr_p():\n    sc = _seam.schema\n    return sc._TYPE_NAMES",
        "reads _TYPE_NAMES: a private name of a module word",
    ),
    "a private name of a module word, through a C global": (
        "cdef object _FR_SC = _seam.schema\ncdef object _FR_P = _FR_SC._TYPE_NAMES",
        "reads _TYPE_NAMES: a private name of a module word",
    ),
    "the seam handed around": (
        'cdef object _FR_P = getattr(_seam, "_too_large")',
        "uses _seam (the seam module) other than to read a word of it",
    ),
    "a module word handed around": (
        'cdef object _FR_P = getattr(_seam.schema, "_TYPE_NAMES")',
        "other than to read a name of it",
    ),
    "an import by name": (
        'cdef object _FR_P = __import__("agui_wire.asgi")',
        "calls __import__: code by name",
    ),
    "a module not listed": ("import importlib as _fr_il", "imports importlib, which the"),
    "sys.modules": (
        'import sys as _fr_sys\ncdef object _FR_P = _fr_sys.modules["agui_wire.asgi"]',
        "reads sys.modules",
    ),
}


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_each_route_past_the_seam_is_refused(seam: Seam, route: str) -> None:
    text, expected = ROUTES[route]
    found = seam_problems(EXTENSION, seam, EXTERNAL, planted(text))
    assert len(found) == 1, found
    assert found[0].startswith(f"{FRAMING}:"), found
    assert expected in found[0], found


def test_a_word_no_file_reads_is_refused(seam: Seam) -> None:
    files = sources(EXTENSION)
    files[FRAMING] = files[FRAMING].replace("_seam.FEED_AFTER_CLOSE", '"closed"')
    assert seam_problems(EXTENSION, seam, EXTERNAL, files) == [
        "agui_wire._codec.seam: FEED_AFTER_CLOSE is in __all__ but no file of the "
        "extension reads it"
    ]


def test_cimports_are_c_declarations_not_python(seam: Seam) -> None:
    files = planted("from agui_wire._capi cimport agw_copy")
    assert seam_problems(EXTENSION, seam, EXTERNAL, files) == []
