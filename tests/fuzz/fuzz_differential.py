"""Fuzz target: the three payload decoders must agree on every input.

Strategy: the input is one frame payload. It is decoded by the Cython decoder
(when built), the pure-Python twin ``proto_reader`` and the upb path
``upb.decode_payload`` -- with the default options, with a small ``max_depth``
derived from the input, and (direct decoders only; upb has no such option) with
``invalid_utf8="replace"``.

Contract checked, as the three modules' docstrings state it:

* pure and Cython agree exactly: the same dict (``same_json``: types, NaN,
  signed zero) and the same warnings in the same order, or the same error with
  the same class, message, offset and unknown fields;
* upb agrees on accept/reject, on the dict and on the warnings, and on the error
  class when both refuse. Messages and offsets are upb's own and not compared.

Any disagreement is a bug in one of them, or a deliberate exception listed in
docs/errors.md with a test in tests/fuzz/test_regressions.py.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

if __name__ == "__main__":
    import atheris

    _instrumented: Any = atheris.instrument_imports(include=["agui_wire", "fuzzlib"])
else:
    _instrumented = contextlib.nullcontext()

with _instrumented:
    from tests.fuzz.fuzzlib import (
        describe,
        known_issue,
        outcome,
        payload_decoders,
        pick,
        same_outcome,
    )

SEEDS = "payloads"
DECODERS = payload_decoders()
DEPTHS = (1, 2, 3, 4, 5, 8, 31, 32, 33)


def compare(data: bytes, options: dict[str, Any]) -> None:
    results = [
        (name, outcome(decode, data, **options))
        for name, decode in DECODERS
        if not (name == "upb" and "invalid_utf8" in options)
    ]
    _, pure = results[0]
    for name, other in results[1:]:
        exact = name != "upb"
        if known_issue(data, pure, name, other):
            continue
        assert same_outcome(pure, other, exact_errors=exact), (
            f"pure and {name} disagree with {options}:\n"
            f"  pure: {describe(pure)}\n  {name}: {describe(other)}"
        )


def test_one_input(data: bytes) -> None:
    compare(data, {})
    compare(data, {"max_depth": pick(data, DEPTHS, 2)})
    compare(data, {"invalid_utf8": "replace"})


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
