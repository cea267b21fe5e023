"""Packaging facts that must agree across files (issue 16).

The Python versions in the classifiers are the ones .ci/packaging.sh builds and
smoke-tests and the ones cibuildwheel builds wheels for; the setuptools floor is the
one that reads ``license = "MIT"``; setup.py's flags follow the compiler family.
.ci/packaging.sh proves the builds themselves (sdist, wheel, auditwheel, clang,
the floors); this keeps the declarations from drifting apart without building.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+ (CI's venv)

ROOT = Path(__file__).resolve().parents[2]


def pyproject() -> dict[str, Any]:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)


def setup_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("agui_wire_setup", ROOT / "setup.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # setup() runs only as __main__
    return module


def test_python_versions_agree() -> None:
    meta = pyproject()
    prefix = "Programming Language :: Python :: 3."
    classified = sorted(
        (
            c.removeprefix("Programming Language :: Python :: ")
            for c in meta["project"]["classifiers"]
            if c.startswith(prefix)
        ),
        key=lambda v: int(v.split(".")[1]),
    )
    script = (ROOT / ".ci/packaging.sh").read_text()
    m = re.search(r"^PYTHONS=\(([^)]*)\)", script, re.M)
    assert m, "PYTHONS=(...) in .ci/packaging.sh"
    assert m.group(1).split() == classified
    wheels = meta["tool"]["cibuildwheel"]["build"]
    assert wheels == [f"cp{v.replace('.', '')}-*" for v in classified]
    assert meta["project"]["requires-python"] == f">={classified[0]}"


def test_license_and_its_setuptools_floor() -> None:
    meta = pyproject()
    assert meta["project"]["license"] == "MIT"
    assert meta["project"]["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    floor = next(r for r in meta["build-system"]["requires"] if r.startswith("setuptools"))
    version = tuple(int(p) for p in floor.removeprefix("setuptools>=").split("."))
    assert version >= (77,), floor  # the first setuptools that reads an SPDX license string
    script = (ROOT / ".ci/packaging.sh").read_text()
    assert f"SETUPTOOLS_FLOOR={floor.removeprefix('setuptools>=')} " in script


def test_pydantic_extra_accepts_both_sdk_lines() -> None:
    extras = pyproject()["project"]["optional-dependencies"]
    assert extras["pydantic"] == ["ag-ui-protocol>=0.1.19,<2"]


def test_compiler_flags_follow_the_compiler() -> None:
    setup = setup_module()
    compile_args, link_args = setup.compiler_flags("unix", "linux")
    assert compile_args == ["-O3", "-g0"]
    assert link_args == ["-Wl,-s"]
    assert setup.compiler_flags("unix", "darwin") == (["-O3", "-g0"], [])  # ld64 has no -s
    compile_args, link_args = setup.compiler_flags("msvc", "win32")
    assert compile_args == ["/O2"]
    assert link_args == []
    assert not any(a.startswith("-") for a in compile_args + link_args)
