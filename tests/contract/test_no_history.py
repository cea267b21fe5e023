"""Source, tests and build files say what is true now and why, never which issue
asked for it: an issue number in a comment or docstring is a pointer a reader of
the code cannot follow (the issues live outside the repository) and goes stale as
soon as the code moves on. The history is in git."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: What a reader of the code reads: the package, its tests, benchmarks and build.
SCOPES = ("src/agui_wire", "tests", "benchmarks", "proto", ".ci")
FILES = ("Makefile", "pyproject.toml", "setup.py")
SUFFIXES = {".py", ".pyx", ".pxi", ".pxd", ".pyi", ".h", ".proto", ".sh", ".toml", ".cfg", ""}
SKIP = {"node_modules", "__pycache__", ".hypothesis", "build"}
ISSUE = re.compile(r"\b[Ii]ssues? #?\d+\b")


def sources() -> list[Path]:
    found = [ROOT / name for name in FILES]
    for scope in SCOPES:
        for path in (ROOT / scope).rglob("*"):
            if SKIP & set(path.relative_to(ROOT).parts) or not path.is_file():
                continue
            if path.suffix in SUFFIXES and path.stat().st_size < 2_000_000:
                found.append(path)
    return found


def test_no_issue_numbers_in_source_tests_or_build_files() -> None:
    hits = []
    for path in sources():
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            if ISSUE.search(line) and "ISSUE = re.compile" not in line:
                hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not hits, "say what is true now and why:\n" + "\n".join(hits)
