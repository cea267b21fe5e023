"""tests/support/twins.py: the Cython side of a twin test is skipped only when the pass
allows it; under ``AGUI_WIRE_REQUIRE_FAST=1`` a missing extension, or a name it lacks,
is an error at collection, so make test's Cython pass never runs the pure twin alone."""

from __future__ import annotations

import sys

import pytest

import agui_wire
from agui_wire._codec import framing
from tests.support import twins


def hide_extension(monkeypatch: pytest.MonkeyPatch) -> None:
    """``from agui_wire import _fast`` raises ImportError (as with no extension built)."""
    monkeypatch.setitem(sys.modules, "agui_wire._fast", None)
    monkeypatch.delattr(agui_wire, "_fast", raising=False)


@pytest.fixture
def no_extension(monkeypatch: pytest.MonkeyPatch) -> None:
    hide_extension(monkeypatch)


def test_a_missing_extension_is_skipped_when_allowed(no_extension, monkeypatch) -> None:
    monkeypatch.delenv("AGUI_WIRE_REQUIRE_FAST", raising=False)
    assert twins.fast("FrameReader") is None
    python, cython = twins.twins(framing, "FrameReader")
    assert (python.id, python.values, python.marks) == ("python", (framing,), ())
    assert cython.id == "cython"
    assert [m.args for m in cython.marks] == [(True,)]


@pytest.mark.parametrize("missing", ["the extension", "a name"])
def test_a_missing_extension_is_an_error_when_required(monkeypatch, missing: str) -> None:
    monkeypatch.setenv("AGUI_WIRE_REQUIRE_FAST", "1")
    if missing == "the extension":
        hide_extension(monkeypatch)
    name = "FrameReader" if missing == "the extension" else "no_such_name"
    for call in (twins.fast, lambda n: twins.twins(framing, n), twins.needs_fast):
        with pytest.raises(RuntimeError, match=f"AGUI_WIRE_REQUIRE_FAST is set but .* {name}"):
            call(name)
