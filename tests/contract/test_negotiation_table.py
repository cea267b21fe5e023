"""docs/serving.md's negotiation table, cell by cell.

Each row's agui_wire columns are checked through every door a server uses:
``negotiate``, ``EventEncoder`` (strict or not), ``EventStreamResponse`` (the
response's content type, or its 406) and, after ``install()``, the SDK's
``EventEncoder`` name (never refusing). The binding column must be what
``wildcard_proto=True`` picks (it is the binding's rule in full), with MUST for
SSE and SHOULD for protobuf; the Python SDK column is the SDK's own class, as
shipped. The ``@ag-ui/encoder`` column is checked against the pinned npm package
in tests/interop/test_sse_interop.py.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import pytest

import agui_wire
from agui_wire import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, compat, negotiate
from agui_wire.asgi import EventStreamResponse
from agui_wire.errors import NotAcceptable
from tests.unit.test_asgi import RUN, Driver

DOC = Path(__file__).resolve().parents[2] / "docs" / "serving.md"
NOT_ACCEPTABLE = "406"


class Row(NamedTuple):
    accept: str | None
    binding: str
    reference: str
    sdk: str
    default: str  # a media type, or NOT_ACCEPTABLE (SSE unless strict)
    option: str


def _transport(cell: str) -> str:
    if cell.startswith("protobuf"):
        return PROTO_MEDIA_TYPE
    assert cell.startswith("SSE"), cell
    return NOT_ACCEPTABLE if "(`strict`: 406)" in cell else SSE_MEDIA_TYPE


def doc_table() -> list[Row]:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("<!-- negotiation-table:")
    lines = text[start:].split("\n\n", 1)[0].splitlines()
    rows = [line for line in lines if line.startswith("| ") and not line.startswith("| `Accept`")]
    table = []
    for line in rows:
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        accept_cell, binding, reference, sdk, default, option = cells
        accept = None if accept_cell == "none" else re.match(r"`([^`]*)`", accept_cell)[1]  # type: ignore[index]
        table.append(
            Row(
                accept,
                binding,
                _transport(reference),
                _transport(sdk),
                _transport(default),
                _transport(option),
            )
        )
    return table


TABLE = doc_table()


def test_the_table_has_every_case_of_the_issue() -> None:
    accepts = {row.accept for row in TABLE}
    assert {
        f"{PROTO_MEDIA_TYPE};q=0.5, {SSE_MEDIA_TYPE}",  # explicit protobuf with a lower q
        "*/*",
        "application/*",
        f"{PROTO_MEDIA_TYPE};q=0",
        None,
        f"{SSE_MEDIA_TYPE};q=0",
        "application/json",
    } <= accepts


@pytest.mark.parametrize("row", TABLE, ids=lambda row: str(row.accept))
def test_the_binding_column_is_the_option(row: Row) -> None:
    expected = negotiate(row.accept, wildcard_proto=True)
    if expected == PROTO_MEDIA_TYPE:
        assert row.binding == "protobuf (SHOULD)"
    else:
        assert row.binding == "SSE (MUST)"


@pytest.mark.parametrize("row", TABLE, ids=lambda row: str(row.accept))
def test_the_sdk_column_is_the_sdk(row: Row) -> None:
    assert compat._SDK_CLASS is not None
    assert compat._SDK_CLASS(accept=row.accept).get_content_type() == row.sdk


def served(accept: str | None, *, strict: bool, wildcard_proto: bool) -> str:
    """What an ``EventStreamResponse`` answers: its content type, or 406."""
    driver = Driver(accept=accept).run(
        EventStreamResponse(RUN, strict=strict, wildcard_proto=wildcard_proto)
    )
    if driver.start["status"] == 406:
        return NOT_ACCEPTABLE
    assert driver.start["status"] == 200
    assert driver.events() == RUN
    return driver.headers["content-type"]


@pytest.fixture
def restore() -> object:
    yield
    compat.uninstall()


@pytest.mark.usefixtures("restore")
@pytest.mark.parametrize("wildcard_proto", [False, True], ids=["default", "wildcard_proto"])
@pytest.mark.parametrize("row", TABLE, ids=lambda row: str(row.accept))
def test_the_agui_wire_columns_through_every_door(row: Row, wildcard_proto: bool) -> None:
    want = row.option if wildcard_proto else row.default
    lenient = SSE_MEDIA_TYPE if want == NOT_ACCEPTABLE else want
    assert negotiate(row.accept, wildcard_proto=wildcard_proto) == lenient
    encoder = agui_wire.EventEncoder(row.accept, wildcard_proto=wildcard_proto)
    assert encoder.content_type == lenient
    assert served(row.accept, strict=False, wildcard_proto=wildcard_proto) == lenient
    assert served(row.accept, strict=True, wildcard_proto=wildcard_proto) == want
    if want == NOT_ACCEPTABLE:
        with pytest.raises(NotAcceptable):
            agui_wire.EventEncoder(row.accept, strict=True, wildcard_proto=wildcard_proto)
    else:
        assert (
            agui_wire.EventEncoder(
                row.accept, strict=True, wildcard_proto=wildcard_proto
            ).content_type
            == want
        )
    compat.install(wildcard_proto=wildcard_proto)
    from ag_ui.encoder import EventEncoder as Installed

    assert Installed(accept=row.accept).get_content_type() == lenient
