"""No hand-written source file over 1,000 lines.

A file a reviewer cannot hold beside its twin is split along its seams: the C twins
into parts in their pure twin's order (``_codec/_proto_writer_*.pxi``), the run store
into a package, the proto codec's differential tests by direction. Counted: every
source file of the package (Python, stubs, Cython ``.pyx``/``.pxd``/``.pxi``, C), the
tests, benchmarks, examples and build scripts, except what a generator writes
(``agui_wire/_pb`` from proto/generate.py, the ``_fast.c`` cythonize writes) and what
is installed (``node_modules``, venvs, build trees).
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 1000
TOPS = ("src", "tests", "benchmarks", "examples", "proto", ".ci")
SUFFIXES = {".py", ".pyi", ".pyx", ".pxd", ".pxi", ".h", ".c", ".sh", ".js", ".cjs", ".mjs"}
GENERATED = (ROOT / "src" / "agui_wire" / "_pb", ROOT / "src" / "agui_wire" / "_fast.c")
INSTALLED = {"node_modules", "__pycache__", "build", ".venv"}


def hand_written() -> list[Path]:
    files = [ROOT / "setup.py", ROOT / "Makefile", ROOT / ".ci" / "run"]
    for top in TOPS:
        for p in sorted((ROOT / top).rglob("*")):
            if (
                p.suffix in SUFFIXES
                and p.is_file()
                and not any(p == g or g in p.parents for g in GENERATED)
                and not INSTALLED & set(p.relative_to(ROOT).parts)
            ):
                files.append(p)
    return files


def test_no_hand_written_source_file_is_over_the_limit() -> None:
    over = {}
    for p in hand_written():
        with open(p, "rb") as f:
            n = sum(1 for _ in f)
        if n > LIMIT:
            over[str(p.relative_to(ROOT))] = n
    assert over == {}, f"split these along their seams (at most {LIMIT} lines each)"


def test_the_count_sees_every_kind_of_source_and_skips_the_generated() -> None:
    names = {p.name for p in hand_written()}
    assert {"schema.py", "_fast.pyx", "_fast.pyi", "_capi.pxd", "_helpers.h"} <= names
    assert {"_common.pxi", "_proto_writer_wire.pxi", "_proto_reader_wire.pxi"} <= names
    assert {"test_proto_codec.py", "sanitize.sh", "node_bench.cjs", "generate.py"} <= names
    assert "events_pb2.py" not in names
    assert "_fast.c" not in names
