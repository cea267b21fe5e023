"""The drill runs once per session (one scratch copy, one build); the tests only
read its reports."""

from __future__ import annotations

from typing import Any

import pytest

from tests.evolution import scratch

_drills: list[scratch.Drill] = []


@pytest.fixture(scope="session")
def drill(tmp_path_factory: pytest.TempPathFactory) -> scratch.Drill:
    pytest.importorskip(
        "grpc_tools",
        reason="the drill regenerates agui_wire._pb with grpcio-tools (make .venv/.installed)",
    )
    result = scratch.run(tmp_path_factory.mktemp("evolution"))
    _drills.append(result)
    return result


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for d in _drills:
        steps = ", ".join(f"{step} {s:.1f} s" for step, s in d.timings.items())
        terminalreporter.write_line(f"evolution drill in {d.scratch}: {steps}")
        for step, tail in d.failures.items():
            terminalreporter.write_line(f"evolution drill: {step} failed:\n{tail}")
