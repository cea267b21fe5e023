"""Shared fixtures: the codec implementations the suite runs side by side."""

from __future__ import annotations

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
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


class Codec:
    """One implementation of the direct protobuf codec."""

    def __init__(self, name: str, module_writer: object, module_reader: object) -> None:
        self.name = name
        self.encode_payload = module_writer.encode_payload  # type: ignore[attr-defined]
        self.encode_frame = module_writer.encode_frame  # type: ignore[attr-defined]
        self.encode_frames = module_writer.encode_frames  # type: ignore[attr-defined]
        self.decode_payload = module_reader.decode_payload  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return self.name


def _codecs() -> list[object]:
    import pytest

    from agui_wire._codec import proto_reader, proto_writer

    params: list[object] = [pytest.param(Codec("python", proto_writer, proto_reader), id="python")]
    try:
        from agui_wire import _fast
    except ImportError:
        _fast = None
    if _fast is not None and hasattr(_fast, "encode_payload") and hasattr(_fast, "decode_payload"):
        params.append(pytest.param(Codec("cython", _fast, _fast), id="cython"))
    elif os.environ.get("AGUI_WIRE_REQUIRE_FAST", "") not in ("", "0"):
        raise RuntimeError("AGUI_WIRE_REQUIRE_FAST is set but agui_wire._fast has no codec")
    else:
        params.append(
            pytest.param(
                None, id="cython", marks=pytest.mark.skip("agui_wire._fast codec not built")
            )
        )
    return params


def pytest_generate_tests(metafunc: object) -> None:
    if "codec" in metafunc.fixturenames:  # type: ignore[attr-defined]
        metafunc.parametrize("codec", _codecs())  # type: ignore[attr-defined]
