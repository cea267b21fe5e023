"""The generated protobuf modules are what proto/generate.py makes from proto/ today."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _generate_module():
    spec = importlib.util.spec_from_file_location("generate", ROOT / "proto" / "generate.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_modules_are_fresh() -> None:
    assert _generate_module().stale_files() == []


def test_staleness_is_detected(tmp_path: Path) -> None:
    generate = _generate_module()
    out = tmp_path / "_pb"
    generate.generate(out)
    assert generate.stale_files(out) == []
    events = out / "events_pb2.py"
    events.write_text(events.read_text() + "\n# hand edit\n")
    (out / "types_pb2.pyi").unlink()
    assert generate.stale_files(out) == ["events_pb2.py", "types_pb2.pyi"]


def test_generated_code_is_only_rewritten_for_relative_imports() -> None:
    text = (ROOT / "src" / "agui_wire" / "_pb" / "events_pb2.py").read_text()
    assert "from . import patch_pb2" in text
    assert "from ag_ui import" not in text
