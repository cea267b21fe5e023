"""Shared fixtures: the codec implementations the suite runs side by side."""

from __future__ import annotations

import faulthandler
import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "default",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "ci",
    deadline=None,
    max_examples=200,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
# tests/sanitize.sh --ci: CPython on ASan's malloc is ~5x slower, so fewer examples
settings.register_profile("sanitize", parent=settings.get_profile("ci"), max_examples=50)
# make judge-campaign: tests/interop/test_zod_agreement.py at length
settings.register_profile("campaign", parent=settings.get_profile("ci"), max_examples=5000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

# `make test` runs the suite twice: on the Cython extension, then on the pure-Python
# twins (AGUI_WIRE_PURE=1). What cannot tell the two apart runs in the first pass only
# (marker `once`; the pure pass is `-m "not once"`): the paths below, which exercise the
# codec only through the public entry points that unit/, differential/, contract/,
# interop/ and fuzz/ run on both backends; and any test marked `once` by hand because it
# picks its implementations itself (parametrized over pure, Cython, upb). A test in
# these paths whose own outcome depends on the backend (the memory a replica or server
# holds while it decodes or encodes) is marked `both_backends` and runs in both passes.
ONCE = (
    "tests/cli/",  # the command line; its timeline page in a real chromium
    "tests/e2e/",  # real uvicorn, node and redis-server peers (asgi: unit/test_asgi*.py)
    "tests/redis/",  # the run store's logic against a real redis-server
    "tests/runstore/",  # the run store's contract, on memory, redis-server and a cluster
    "tests/contract/test_docs.py",  # the documents' code blocks, run as a user would
    "tests/contract/test_layers.py",  # static: import layers, file sizes, C twins,
    "tests/contract/test_file_sizes.py",  # packaging metadata, the C/Python seam,
    "tests/contract/test_c_twins.py",  # one class per public name
    "tests/contract/test_packaging.py",
    "tests/contract/test_seam.py",
    "tests/contract/test_public_names.py",
    "tests/contract/test_watchdogs.py",  # the suite's own deadlines and twin params
    "tests/contract/test_twins.py",
    "tests/interop/test_cli_validate.py",  # agui_wire.validate and _jsonpatch: no codec
    "tests/interop/test_run_state.py",
    "tests/interop/test_jsonpatch_reference.py",
)


def pytest_collection_modifyitems(config: object, items: list[object]) -> None:
    import pytest

    root = config.rootpath  # type: ignore[attr-defined]
    for item in items:
        path = item.path.relative_to(root).as_posix()  # type: ignore[attr-defined]
        if path.startswith(ONCE) and item.get_closest_marker("both_backends") is None:  # type: ignore[attr-defined]
            item.add_marker(pytest.mark.once)  # type: ignore[attr-defined]


class Codec:
    """One implementation of the direct protobuf codec."""

    def __init__(self, name: str, module_writer: object, module_reader: object) -> None:
        self.name = name
        self.encode_payload = module_writer.encode_payload  # type: ignore[attr-defined]
        self.encode_proto = module_writer.encode_proto  # type: ignore[attr-defined]
        self.encode_frames = module_writer.encode_frames  # type: ignore[attr-defined]
        self.decode_payload = module_reader.decode_payload  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return self.name


def _codecs() -> list[object]:
    import pytest

    from agui_wire._codec import proto_reader, proto_writer
    from tests.support.twins import fast, needs_fast

    c = fast("encode_payload") and fast("decode_payload")  # an error when required
    return [
        pytest.param(Codec("python", proto_writer, proto_reader), id="python"),
        pytest.param(c and Codec("cython", c, c), id="cython", marks=needs_fast("decode_payload")),
    ]


def pytest_generate_tests(metafunc: object) -> None:
    if "codec" in metafunc.fixturenames:  # type: ignore[attr-defined]
        metafunc.parametrize("codec", _codecs())  # type: ignore[attr-defined]


def pytest_unconfigure(config: object) -> None:
    """A process that does not exit within 120 s of the session's end (a thread that is
    not a daemon still running, an atexit hook stuck) prints every thread's stack and
    exits 1. Tests time out one by one (faulthandler_timeout, pyproject.toml); this is
    the hang after the last one, which would hold a pass run without xdist (frameworks,
    sanitize) forever."""
    faulthandler.dump_traceback_later(120, exit=True)
