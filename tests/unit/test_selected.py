"""agui_wire._codec.selected: which implementation runs, that falling back to the pure
twins is never silent by accident, and that the names it binds are the extension's
every public name, each with its own name and the signature of its pure twin.

A broken extension is simulated, not built: in a fresh interpreter a meta path
finder hands ``agui_wire._fast`` a loader that raises what a bad ``.so`` raises
(an undefined symbol, or the ImportError the C tables raise for a schema they
cannot hold). The absent / built-for-another-Python cases are decided by
``_broken_extension`` from the package directory alone, checked on temporary ones.
A stale extension (one built before a name was added) is the real one with names
deleted before the selector loads.
"""

from __future__ import annotations

import inspect
import json
import os
import pydoc
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from agui_wire._codec import (
    framing,
    proto_reader,
    proto_writer,
    resp,
    selected,
    sse_reader,
    sse_writer,
    stream_decoder,
)
from agui_wire.errors import ExtensionWarning
from tests.support.twins import needs_fast

# Runs in a fresh interpreter: install the broken stand-in (unless told not to),
# use a codec, print which implementation ran and the warnings seen.
_CHILD = r"""
import importlib.abc, importlib.util, json, sys, warnings

class Broken(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name == "agui_wire._fast" and BROKEN:
            return importlib.util.spec_from_loader(name, self)
        return None
    def create_module(self, spec):
        raise ImportError(REASON)
    def exec_module(self, module):
        raise AssertionError("unreachable")

BROKEN, REASON = json.loads(sys.argv[1])
sys.meta_path.insert(0, Broken())
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    import agui_wire
    frame = agui_wire.encode_proto({"type": "RUN_STARTED", "threadId": "t", "runId": "r"})
    agui_wire.decode_proto(frame)
    import agui_wire._codec.selected as selected
print(json.dumps({
    "name": selected.NAME,
    "warnings": [[w.category.__name__, str(w.message)] for w in seen],
}))
"""


def _child(*, broken: bool, pure: bool, reason: str = "undefined symbol: agw_nope") -> dict:
    env = {k: v for k, v in os.environ.items() if k != "AGUI_WIRE_PURE"}
    if pure:
        env["AGUI_WIRE_PURE"] = "1"
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps([broken, reason])],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    result: dict = json.loads(out.stdout)
    return result


def test_a_broken_extension_warns_once_naming_the_cause() -> None:
    reason = "agui_wire._fast: a field number beyond the decoder's tables (Message.trace_id = 99)"
    got = _child(broken=True, pure=False, reason=reason)
    assert got["name"] == "python"
    assert len(got["warnings"]) == 1, got
    category, message = got["warnings"][0]
    assert category == "ExtensionWarning"
    assert reason in message
    assert "AGUI_WIRE_PURE=1" in message


def test_forced_pure_is_quiet_even_with_a_broken_extension() -> None:
    got = _child(broken=True, pure=True)
    assert got == {"name": "python", "warnings": []}


def test_a_working_extension_is_quiet() -> None:
    got = _child(broken=False, pure=False)
    assert got["warnings"] == []
    built = any(p.suffix in (".so", ".pyd") for p in selected._PACKAGE.glob("_fast*"))
    assert got["name"] == ("cython" if built else "python")


def test_extension_warning_is_a_runtime_warning() -> None:
    assert issubclass(ExtensionWarning, RuntimeWarning)


def _missing() -> ModuleNotFoundError:
    return ModuleNotFoundError("No module named 'agui_wire._fast'", name="agui_wire._fast")


def test_no_extension_at_all_is_quiet(tmp_path: Path) -> None:
    (tmp_path / "_fast.pyx").write_text("")  # sources alone: a pure install
    (tmp_path / "_fast.c").write_text("")
    assert selected._broken_extension(_missing(), tmp_path) is None


@pytest.mark.parametrize(
    "name", ["_fast.cpython-399-x86_64-linux-gnu.so", "_fast.cp399-win_amd64.pyd"]
)
def test_an_extension_for_another_python_is_named(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_bytes(b"")
    cause = selected._broken_extension(_missing(), tmp_path)
    assert cause is not None
    assert name in cause


def test_a_missing_dependency_inside_the_extension_is_not_absence(tmp_path: Path) -> None:
    # ModuleNotFoundError for another module, raised while _fast imports
    exc = ModuleNotFoundError("No module named 'nope'", name="nope")
    cause = selected._broken_extension(exc, tmp_path)
    assert cause is not None
    assert "nope" in cause


def test_load_fast_warns_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGUI_WIRE_PURE", raising=False)

    def broken(name: str) -> None:
        raise ImportError("undefined symbol: agw_nope")

    monkeypatch.setattr(selected.importlib, "import_module", broken)
    with pytest.warns(ExtensionWarning, match="undefined symbol: agw_nope"):
        assert selected._load_fast() is None
    monkeypatch.setenv("AGUI_WIRE_PURE", "1")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert selected._load_fast() is None


_IMPORT_FAST_FIRST = r"""
import agui_wire._fast  # before anything else, as tests/fuzz/fuzzlib.py does
import agui_wire
from agui_wire._codec import selected
frame = agui_wire.encode_proto({"type": "RUN_STARTED", "threadId": "t", "runId": "r"})
print(selected.NAME, agui_wire.decode_proto(frame)[0]["type"])
# every name the extension has is bound to it, those defined after its imports too
print(sorted(set(selected.IMPLEMENTATIONS.values())))
"""


@pytest.mark.skipif(
    not any(p.suffix in (".so", ".pyd") for p in selected._PACKAGE.glob("_fast*")),
    reason="needs the built extension",
)
@pytest.mark.parametrize("pure", [False, True], ids=["cython", "pure"])
def test_importing_the_extension_first_is_not_a_cycle(pure: bool) -> None:
    # The extension imports the pure twins and the selector binds both, so whichever is
    # imported first, no twin may be half made when the selector binds it: a twin that
    # imported the selector would be (AttributeError: partially initialized module).
    # No twin imports it (the layers contract).
    env = {k: v for k, v in os.environ.items() if k != "AGUI_WIRE_PURE"}
    if pure:
        env["AGUI_WIRE_PURE"] = "1"
    out = subprocess.run(
        [sys.executable, "-c", _IMPORT_FAST_FIRST],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    impl = "python" if pure else "cython"
    assert out.stdout.split() == [impl, "RUN_STARTED", f"['{impl}']"]


# -- every compiled name, and a stale extension -----------------------------------------

_BUILT = any(p.suffix in (".so", ".pyd") for p in selected._PACKAGE.glob("_fast*"))
_need_fast = needs_fast("EventDecoder")
_COMPILED = [n for n in selected.__all__ if n not in ("IMPLEMENTATIONS", "NAME")]
_PURE = {
    n: getattr(m, n)
    for m in (framing, proto_reader, proto_writer, resp, sse_reader, sse_writer, stream_decoder)
    for n in _COMPILED
    if hasattr(m, n)
}


@_need_fast
def test_the_selector_lists_every_public_name_of_the_extension() -> None:
    from agui_wire import _fast

    assert sorted(n for n in dir(_fast) if not n.startswith("_")) == sorted(_COMPILED)
    assert sorted(selected.IMPLEMENTATIONS) == sorted(_COMPILED)


def test_each_name_is_bound_to_a_twin_of_its_own_name() -> None:
    assert sorted(_PURE) == sorted(_COMPILED)
    for name in _COMPILED:
        bound = getattr(selected, name)
        assert bound.__name__ == name
        if selected.IMPLEMENTATIONS[name] == "python":
            assert bound is _PURE[name]
        else:
            assert bound.__module__ == "agui_wire._fast"


def _parameters(obj: object) -> list[tuple[str, object, object]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(obj).parameters.values()]


@pytest.mark.parametrize("name", _COMPILED)
def test_each_name_has_the_signature_of_its_pure_twin(name: str) -> None:
    """inspect.signature and help() read the compiled builtins (a text signature in
    their docstring), with the pure twin's parameters, kinds and defaults."""
    assert _parameters(getattr(selected, name)) == _parameters(_PURE[name])


def test_the_public_one_shot_encoders_show_their_own_name_and_signature() -> None:
    import agui_wire

    for name in ("encode_proto", "encode_sse", "decode_proto", "decode"):
        public = getattr(agui_wire, name)
        assert public.__name__ == name
        assert next(iter(inspect.signature(public).parameters)) in ("event", "data", "source")
    page = pydoc.render_doc(agui_wire.encode_proto, renderer=pydoc.plaintext)
    assert page.splitlines()[2].startswith("encode_proto(event")  # help()'s title line
    assert "encode_frame" not in page


_STALE = r"""
import json, sys, warnings
import agui_wire._fast as fast
for name in sys.argv[1:]:
    delattr(fast, name)  # as an extension built before these names were added
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    from agui_wire._codec import selected
    import agui_wire
    frame = agui_wire.encode_proto({"type": "RUN_STARTED", "threadId": "t", "runId": "r"})
print(json.dumps({
    "name": selected.NAME,
    "implementations": dict(selected.IMPLEMENTATIONS),
    "modules": {n: getattr(selected, n).__module__ for n in selected.IMPLEMENTATIONS},
    "warnings": [[w.category.__name__, str(w.message)] for w in seen],
}))
"""


@_need_fast
def test_an_extension_lacking_a_name_warns_naming_it() -> None:
    env = {k: v for k, v in os.environ.items() if k != "AGUI_WIRE_PURE"}
    out = subprocess.run(
        [sys.executable, "-c", _STALE, "encode_payload", "SSEDecoder"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    got = json.loads(out.stdout)
    assert got["name"] == "cython"
    stale = {"encode_payload", "SSEDecoder"}
    assert {n for n, i in got["implementations"].items() if i == "python"} == stale
    assert got["modules"]["encode_payload"] == "agui_wire._codec.proto_writer"
    assert got["modules"]["SSEDecoder"] == "agui_wire._codec.stream_decoder"
    assert got["modules"]["encode_proto"] == "agui_wire._fast"
    assert len(got["warnings"]) == 1, got
    category, message = got["warnings"][0]
    assert category == "ExtensionWarning"
    assert "agui_wire._fast lacks SSEDecoder, encode_payload" in message
    assert "Rebuild the extension" in message
