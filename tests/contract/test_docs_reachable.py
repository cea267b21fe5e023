"""Every documentation page the package names is readable by someone who has only the wheel.

Docstrings, error messages and ``--help`` name pages as ``docs/NAME.md``. A wheel
carries them inside the package (``agui_wire/docs/NAME.md``, copied by setup.py's
build_py) and ``agui-wire docs NAME`` prints one. Here:

* every ``docs/NAME.md`` named anywhere under ``src/`` is a page of the repository;
* every ``--help`` that names a page says how to read it (``agui-wire docs NAME``),
  and ``help(agui_wire)`` says where the pages are;
* the build step that makes the wheel's files (setup.py build_py, into a scratch
  directory: no compiler, no network) puts every page in the package, and
  ``agui-wire`` run from that tree alone, outside the repository, lists them and prints
  each page named under ``src/`` byte for byte from the package.

.ci/check_dist.py holds the built wheel to the same list, and .ci/smoke.py runs
``agui-wire docs`` on every page from each installed wheel and sdist.
"""

from __future__ import annotations

import os
import pydoc
import re
import subprocess
import sys
from pathlib import Path

import pytest

import agui_wire
from agui_wire._cli import build_parser
from tests.support.cli_support import run_in_process

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "agui_wire"
PAGES = {p.stem: p for p in sorted((ROOT / "docs").glob("*.md"))}
_NAMED = re.compile(r"\bdocs/((?![A-Z]+\.md)[\w.-]+?)\.md\b")  # not docs/NAME.md
_TEXT = (".py", ".pyi", ".pyx", ".pxi", ".pxd", ".h")


def named_in_src() -> dict[str, list[str]]:
    """Each page named under src/, with where (``file:line``)."""
    out: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*")):
        if path.suffix not in _TEXT or "_pb" in path.parts:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for name in _NAMED.findall(line):
                out.setdefault(name, []).append(f"{path.relative_to(ROOT)}:{number}")
    return out


def helps() -> dict[str, str]:
    """``agui-wire --help`` and every command's, as a terminal shows them."""
    out = {"agui-wire": run_in_process("--help").stdout.decode()}
    for name in build_parser().parse_args([]).commands.choices:
        out[name] = run_in_process(name, "--help").stdout.decode()
    return out


def test_every_page_named_in_src_exists() -> None:
    named = named_in_src()
    assert {"errors", "wire-format", "scaling", "cli"} <= set(named)  # the scan finds them
    missing = {name: where for name, where in named.items() if name not in PAGES}
    assert not missing


def test_help_says_how_to_read_the_pages_it_names() -> None:
    texts = helps()
    assert "agui-wire docs" in texts["agui-wire"]
    for command, text in texts.items():
        for name in _NAMED.findall(text):
            assert name in PAGES, (command, name)
            flat = " ".join(text.split())
            ways = (f"agui-wire docs {name}", f"agui-wire docs docs/{name}.md")
            assert any(way in flat for way in ways), (command, name)
    assert "docs/cli.md" in texts["record"]  # the one command whose help names a page
    shown = pydoc.render_doc(agui_wire, renderer=pydoc.plaintext)
    assert "agui_wire/docs/NAME.md" in shown
    assert "agui-wire docs NAME" in shown


def test_the_docs_command_in_the_checkout() -> None:
    listed = run_in_process("docs")
    assert listed.returncode == 0, listed.stderr
    names = [line.split()[0] for line in listed.stdout.decode().splitlines()[: len(PAGES)]]
    assert names == list(PAGES)
    r = run_in_process("docs", "docs/errors.md")
    assert r.stdout == PAGES["errors"].read_bytes()
    r = run_in_process("docs", "no-such-page")
    assert r.returncode == 2
    assert b"no page 'no-such-page'; the pages are: cli, errors," in r.stderr


@pytest.fixture(scope="module")
def wheel_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package as setup.py's build_py lays it out for the wheel (pure Python)."""
    lib = tmp_path_factory.mktemp("wheel") / "lib"
    env = {**os.environ, "AGUI_WIRE_NO_EXTENSION": "1"}
    r = subprocess.run(
        [sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(lib)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert r.returncode == 0, r.stderr.decode()
    return lib


def test_the_wheel_carries_every_page(wheel_tree: Path) -> None:
    shipped = {p.name: p.read_bytes() for p in (wheel_tree / "agui_wire" / "docs").glob("*")}
    assert shipped == {p.name: p.read_bytes() for p in PAGES.values()}


def test_a_wheel_user_reads_every_page_named(wheel_tree: Path, tmp_path: Path) -> None:
    # agui_wire from the wheel's tree only, run where no repository is around
    env = {**os.environ, "PYTHONPATH": str(wheel_tree), "AGUI_WIRE_PURE": "1"}

    def agui_wire_cli(*args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, "-m", "agui_wire", *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            timeout=60,
            check=False,
        )

    listed = agui_wire_cli("docs")
    assert listed.returncode == 0, listed.stderr
    assert f"(in {wheel_tree / 'agui_wire' / 'docs'};" in listed.stdout.decode()
    for name in named_in_src():
        r = agui_wire_cli("docs", name)
        assert r.returncode == 0, (name, r.stderr)
        assert r.stdout == PAGES[name].read_bytes(), name
        path = agui_wire_cli("docs", name, "--path").stdout.decode().strip()
        assert Path(path) == wheel_tree / "agui_wire" / "docs" / f"{name}.md"
