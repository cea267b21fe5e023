"""One-shot functions beside the bound paths: one small event,
``encode_proto``/``encode_sse``/``decode_proto``/``decode`` vs the ``EventEncoder`` /
``EventDecoder`` method they stand for. ``oneshot.py`` prints them side by side with
their ratios."""

from __future__ import annotations

from typing import Any

import oneshot as O
import pytest

SIDES = [
    pytest.param(row, side, id=f"{row}-{side}")
    for row in O.pairs()
    for side in ("one-shot", "bound")
]


@pytest.mark.parametrize(("row", "side"), SIDES)
def test_one_small_event(benchmark: Any, row: str, side: str) -> None:
    one, bound = O.pairs()[row]
    fn, args = one if side == "one-shot" else bound
    benchmark.group = f"one-shot vs bound: {row}"
    benchmark(fn, *args)
