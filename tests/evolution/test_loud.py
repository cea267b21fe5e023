"""A field the C tables cannot hold (``evolve.FAR_NUMBER``) on the ``loud``
variant: the extension must refuse to import and say why, ``import agui_wire``
must warn that it runs on the pure twins (a ``RuntimeWarning``), and those must
still carry the field. Never a silent drop, never a silent 30-50x slowdown. A
shape no codec has code for (``evolve.UNMAPPED``: a new scalar type among them) is
refused by ``agui_wire.schema`` itself, with a ``SchemaError`` naming the field and
its type."""

from __future__ import annotations

from typing import Any

import pytest

from tests.evolution import evolve, scratch


def _loud(drill: scratch.Drill) -> dict[str, Any]:
    report = drill.report("loud", "loud")
    assert "error" not in report, report["error"]
    return report


def test_fast_refuses_to_import(drill: scratch.Drill) -> None:
    error = _loud(drill)["fast_import"]
    assert error is not None, "agui_wire._fast imported a schema its tables cannot hold"
    assert error.startswith("ImportError: ")


def test_fast_import_error_names_the_field(drill: scratch.Drill) -> None:
    error = _loud(drill)["fast_import"] or ""
    assert any(s in error for s in ("far_away", "farAway", str(evolve.FAR_NUMBER))), error


def test_import_agui_wire_warns(drill: scratch.Drill) -> None:
    report = _loud(drill)
    assert report["backend"] == "python"
    runtime = [w for w in report["warnings"] if w["runtime"]]
    assert len(runtime) == 1, report["warnings"]
    assert "_fast" in runtime[0]["message"], runtime[0]["message"]


def test_pure_twins_still_carry_it(drill: scratch.Drill) -> None:
    result = _loud(drill)["pure"]
    assert result["ok"], result["detail"]


@pytest.mark.parametrize("key", list(evolve.UNMAPPED))
def test_unmapped_shape_fails_at_import(drill: scratch.Drill, key: str) -> None:
    """A shape no codec has code for (a repeated scalar, repeated JSON values, a
    map, a double or bytes field, a google.protobuf.Timestamp) makes
    ``agui_wire.schema`` refuse to import with a ``SchemaError`` (an
    ``ImportError``) naming the field and its type."""
    report = drill.report(f"unmapped-{key}", "schema")
    assert "error" not in report, report["error"]
    error = report["schema_import"]
    assert error is not None, f"agui_wire.schema imported a schema with {evolve.UNMAPPED[key]}"
    *label, field = evolve.UNMAPPED[key].split()
    assert error.startswith("SchemaError: "), error
    assert f"StepStartedEvent.{field}" in error, error
    assert " ".join(w for w in label if w != "optional") in error, error
