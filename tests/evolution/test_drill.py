"""Every backend carries what the evolved schema adds, one test
per (variant, thing, property); ``scratch.py`` says what the variants are,
``evolve.py`` what each thing adds, ``_probe.py`` how each property is checked.

Properties: ``encode-*`` (the new data is on the wire, ``extra_keys="error"``
accepts the new keys), ``decode-*`` (bytes that carry it decode to the input),
``same-bytes`` (Cython, pure and upb write the same payload), ``sse-*`` (written
and read back to the input), ``sse-same-bytes``, ``c-path`` (the extension
handled every check itself: its fallback counters did not move), ``validate``
(no error from the validator), ``normalize`` (leaves the decoded form as it is).

What fails today is marked ``xfail(strict=True)`` with the reason; when the work
turns one into a pass, its marker must go.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.evolution import scratch

# property -> (run, key in the probe's report); None: compared across runs
PROPERTIES: dict[str, tuple[str, str] | None] = {
    "encode-cython": ("cython", "encode"),
    "encode-pure": ("pure", "encode"),
    "encode-upb": ("cython", "encode_upb"),
    "same-bytes": None,
    "decode-cython": ("cython", "decode"),
    "decode-pure": ("pure", "decode"),
    "decode-upb": ("cython", "decode_upb"),
    "sse-cython": ("cython", "sse"),
    "sse-pure": ("pure", "sse"),
    "sse-same-bytes": None,
    "c-path": ("cython", "c_path"),
    "validate": ("cython", "validate"),
    "normalize": ("cython", "normalize"),
}

# (variant, thing, property) -> why it fails today (an entry here is marked
# xfail(strict=True) with its reason)
TODAY: dict[tuple[str, str, str], str] = {}


def _cases() -> list[Any]:
    cases = []
    for variant, (_, things) in scratch.VARIANTS.items():
        for thing in things:
            for prop in PROPERTIES:
                why = TODAY.get((variant, thing, prop))
                marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
                cases.append(
                    pytest.param(variant, thing, prop, id=f"{variant}-{thing}-{prop}", marks=marks)
                )
    return cases


def _report(drill: scratch.Drill, variant: str, mode: str) -> dict[str, Any]:
    report = drill.report(variant, mode)
    why = [f"{step} failed:\n{tail}" for step, tail in drill.failures.items()]
    if "error" in report:
        why.insert(0, f"the {mode} run on the {variant} tree failed: {report['error']}")
        pytest.fail("\n".join(why))
    if mode == "cython" and report["backend"] != "cython":
        why.insert(0, f"the extension did not load: {report.get('fast_error')}")
        pytest.fail("\n".join(why))
    return report


def _result(drill: scratch.Drill, variant: str, mode: str, thing: str, key: str) -> dict[str, Any]:
    result: dict[str, Any] = _report(drill, variant, mode)["things"][thing][key]
    return result


def _same(named: dict[str, dict[str, Any]]) -> None:
    missing = [f"{name}: {r['detail']}" for name, r in named.items() if "hex" not in r]
    assert not missing, "no bytes to compare: " + "; ".join(missing)
    (first, ref), *rest = named.items()
    for name, r in rest:
        assert r["hex"] == ref["hex"], f"{name} and {first} write different bytes"


@pytest.mark.parametrize(("variant", "thing", "prop"), _cases())
def test_drill(drill: scratch.Drill, variant: str, thing: str, prop: str) -> None:
    where = PROPERTIES[prop]
    if where is not None:
        result = _result(drill, variant, *where[:1], thing, where[1])
        assert result["ok"], result["detail"]
    elif prop == "same-bytes":
        _same(
            {
                "cython": _result(drill, variant, "cython", thing, "encode"),
                "pure": _result(drill, variant, "pure", thing, "encode"),
                "upb": _result(drill, variant, "cython", thing, "encode_upb"),
            }
        )
    else:
        _same(
            {
                "cython": _result(drill, variant, "cython", thing, "sse"),
                "pure": _result(drill, variant, "pure", thing, "sse"),
            }
        )
