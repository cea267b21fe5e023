"""The layering contract: ``lint-imports`` with pyproject.toml's [tool.importlinter]
passes on the tree, and fails on a scratch copy of the package into which one bad
import is written: an upward import, the same import hidden under ``TYPE_CHECKING``,
an import cycle between two siblings, a twin that reaches the selector (``selected``),
a C twin (``.pxi``) that imports a module of the package or reads a private name past
the seam (the ``extension_seam`` contract, tests/contract/seam_contract.py), and a
module that imports the seam, which is the extension's alone. Each case is a real run
of the linter, so a contract that has stopped checking (a layer name misspelt, a
package the linter cannot see) fails here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "agui_wire"
LINT = Path(sys.executable).parent / "lint-imports"

pytestmark = pytest.mark.skipif(not LINT.exists(), reason="import-linter is not installed")


def lint(src: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` on the package under ``src``, with the project's contracts."""
    # ROOT: the extension_seam contract type is tests.contract.seam_contract
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(src), str(ROOT)))}
    return subprocess.run(
        [str(LINT), "--no-cache", "--no-logo", str(ROOT / "pyproject.toml")],
        cwd=src,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def tree_result() -> subprocess.CompletedProcess[str]:
    return lint(ROOT / "src")


def test_the_tree_keeps_every_contract(tree_result: subprocess.CompletedProcess[str]) -> None:
    assert tree_result.returncode == 0, tree_result.stdout + tree_result.stderr
    assert " 0 broken" in tree_result.stdout
    # every module is seen: a package without __init__.py is invisible to the linter
    assert "Analyzed" in tree_result.stdout


# (file to edit, lines appended, what the report must name: the import it refuses)
BAD_IMPORTS = {
    "upward": (
        "errors.py",
        "from agui_wire import asgi as _asgi  # noqa\n",
        "agui_wire.errors -> agui_wire.asgi",
    ),
    "upward-under-TYPE_CHECKING": (
        "_codec/framing.py",
        "import typing\nif typing.TYPE_CHECKING:\n    from agui_wire._decoder import decode\n",
        "agui_wire._codec.framing -> agui_wire._decoder",
    ),
    "cycle-between-siblings": (
        "validate/_problem.py",
        "from agui_wire.validate import _stream as _s  # noqa\n",
        "No cycles are allowed in agui_wire.validate",
    ),
    "twin-imports-the-selector": (
        "_codec/proto_reader.py",
        "from agui_wire._codec import selected as _b  # noqa\n",
        "agui_wire._codec.proto_reader -> agui_wire._codec.selected",
    ),
    "c-twin-imports-the-http-layer": (
        "_codec/_framing.pxi",
        "from agui_wire import asgi as _fr_asgi\n",
        "imports agui_wire.asgi: the extension reaches the package only through "
        "agui_wire._codec.seam",
    ),
    "c-twin-imports-its-pure-twin": (
        "_codec/_sse_writer.pxi",
        "from agui_wire._codec import sse_writer as _sse_py\n",
        "imports agui_wire._codec.sse_writer: the extension reaches the package only",
    ),
    "a-module-imports-the-seam": (
        "_encoder.py",
        "from agui_wire._codec import seam as _seam  # noqa\n",
        "agui_wire._encoder -> agui_wire._codec.seam",
    ),
    "c-twin-reads-a-private-name": (
        "_codec/_framing.pxi",
        "cdef object _FR_PLANTED = _seam._too_large\n",
        "reads _too_large of agui_wire._codec.seam: a private name, not a word of its __all__",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_IMPORTS))
def test_a_bad_import_breaks_the_contract(case: str, tmp_path: Path) -> None:
    path, line, expected = BAD_IMPORTS[case]
    scratch = tmp_path / "agui_wire"
    shutil.copytree(PACKAGE, scratch, ignore=shutil.ignore_patterns("*.so", "*.c", "__pycache__"))
    target = scratch / path
    target.write_text(target.read_text() + line)
    result = lint(tmp_path)
    assert result.returncode != 0, result.stdout
    assert expected in " ".join(result.stdout.split()), result.stdout
