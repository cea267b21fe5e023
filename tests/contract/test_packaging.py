"""Packaging facts that must agree across files.

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


# -- the C sources build with GCC, Clang and MSVC --------------------

CODEC = ROOT / "src" / "agui_wire" / "_codec"
PORTABLE = CODEC / "_portable.h"
# what only GCC/Clang (or only MSVC) know; _portable.h puts each behind a guard
COMPILER_SPECIFIC = re.compile(r"__builtin_\w+|__attribute__|__declspec|__forceinline|_BitScan\w+")


def c_sources() -> list[Path]:
    """Every file whose text reaches the C compiler: the .pyx, .pxd, .pxi and headers."""
    pkg = ROOT / "src" / "agui_wire"
    return sorted(
        {*pkg.glob("*.pyx"), *pkg.glob("*.pxd"), *CODEC.glob("*.pxi"), *CODEC.glob("*.h")}
    )


def test_compiler_specific_c_is_only_in_the_portable_header() -> None:
    """A __builtin_* call in a .pxi (or any header but _portable.h) has no MSVC form:
    a Windows build could not compile it."""
    for path in c_sources():
        if path != PORTABLE:
            found = COMPILER_SPECIFIC.findall(path.read_text())
            assert not found, f"{path.relative_to(ROOT)}: {found}: put it in _portable.h"


@pytest.mark.parametrize("compiler", ["msvc", "gcc"])
def test_the_portable_header_has_a_form_for_each_compiler(compiler: str, tmp_path: Path) -> None:
    """_portable.h preprocessed as MSVC sees it (_MSC_VER, no __clang__) uses no
    __builtin_*, and as GCC/Clang see it uses no MSVC intrinsic, and each of its
    helpers is defined both ways. Preprocessed with the C compiler at hand (the one
    that builds the extension), with an empty <intrin.h>."""
    import shutil
    import subprocess
    import sysconfig

    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(cc) is None:
        pytest.skip(f"no C compiler ({cc})")
    (tmp_path / "intrin.h").write_text("")
    use = tmp_path / "use.c"
    use.write_text(
        f'#include "{PORTABLE}"\n'
        "int pop(uint64_t x) { return agw_popcount64(x); }\n"
        "int ctz(uint64_t x) { return agw_ctz64(x); }\n"
        "void pre(const void *p) { agw_prefetch_read(p); }\n"
    )
    flags = ["-D_MSC_VER=1930", "-D_M_X64", "-U__clang__"] if compiler == "msvc" else []
    out = subprocess.run(
        [cc, "-E", "-P", "-I", str(tmp_path), *flags, str(use)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    head, body = out.split("int pop(", 1)
    for helper in ("agw_popcount64", "agw_ctz64", "agw_prefetch_read"):
        # a macro expands at the use; a function is defined before it
        defined = re.search(rf"\b{helper}\([^)]*\)\s*\{{", head)
        assert helper not in body or defined, f"_portable.h defines no {helper} for {compiler}"
    if compiler == "msvc":
        assert "__builtin_" not in out, body
        assert "_BitScanForward64" in out
    else:
        assert "_BitScan" not in out, body
        assert "__builtin_popcountll" in body
