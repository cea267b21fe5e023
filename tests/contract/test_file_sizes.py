"""No hand-written source file over 1,000 lines (issue 26 item 3).

A file a reviewer cannot hold beside its twin is split along its seams: the C twins
into parts in their pure twin's order (``_codec/_proto_writer_*.pxi``), the run store
into a package. Counted: every source file under ``src/`` (Python, stubs, Cython
``.pyx``/``.pxd``/``.pxi``, C) except what a generator writes: ``agui_wire/_pb``
(proto/generate.py) and the ``_fast.c`` that cythonize writes at build time.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 1000
SUFFIXES = {".py", ".pyi", ".pyx", ".pxd", ".pxi", ".h", ".c"}
GENERATED = (
    ROOT / "src" / "agui_wire" / "_pb",
    ROOT / "src" / "agui_wire" / "_fast.c",
)


def hand_written(top: Path) -> list[Path]:
    return [
        p
        for p in sorted(top.rglob("*"))
        if p.suffix in SUFFIXES
        and p.is_file()
        and not any(p == g or g in p.parents for g in GENERATED)
        and "__pycache__" not in p.parts
    ]


def test_no_hand_written_source_file_is_over_the_limit() -> None:
    over = {}
    for p in hand_written(ROOT / "src"):
        with open(p, "rb") as f:
            n = sum(1 for _ in f)
        if n > LIMIT:
            over[str(p.relative_to(ROOT))] = n
    assert over == {}, f"split these along their seams (at most {LIMIT} lines each)"


def test_the_count_sees_every_kind_of_source_and_skips_the_generated() -> None:
    names = {p.name for p in hand_written(ROOT / "src")}
    assert {"schema.py", "_fast.pyx", "_fast.pyi", "_capi.pxd", "_helpers.h"} <= names
    assert {"_common.pxi", "_proto_writer_wire.pxi", "_proto_reader_wire.pxi"} <= names
    assert "events_pb2.py" not in names
    assert "_fast.c" not in names
