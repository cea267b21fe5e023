"""One contract: what @ag-ui/core's zod schemas reject, every encoder refuses.

``validation_cases.BROKEN_EVENTS`` are events the reference client's schemas
reject (tests/interop/test_cli_validate.py proves it against ``@ag-ui/core``);
``VALID_ODDITIES`` ones they accept though they look wrong. An encoder refuses
the first with an ``EncodeError`` naming the same place ``validate_event`` names,
and writes the second. A case that holds ``None`` is left out: to an encoder
``None`` means "absent" (the reference's ``omitOptionalNulls``), while the JSON
``null`` the validator judges is a value.

Runs against both codec implementations (``codec``) and both transports.
"""

from __future__ import annotations

from typing import Any

import pytest

from agui_wire import EncodeError
from agui_wire.validate import validate_event
from tests.support.validation_cases import BROKEN_EVENTS, VALID_ODDITIES


def _holds_none(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, dict):
        return any(_holds_none(v) for v in value.values())
    if isinstance(value, list):
        return any(_holds_none(v) for v in value)
    return False


REFUSED = {name: event for name, (event, _) in BROKEN_EVENTS.items() if not _holds_none(event)}
ACCEPTED = {name: event for name, event in VALID_ODDITIES.items() if not _holds_none(event)}


def first_error_path(event: Any) -> str:
    return next(p.path for p in validate_event(event) if p.severity == "error")


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_protobuf_refuses_what_the_reference_rejects(codec, name: str) -> None:
    event = REFUSED[name]
    with pytest.raises(EncodeError) as caught:
        codec.encode_frame(event)
    if isinstance(event, dict) and name not in ("no type", "not an object"):
        assert caught.value.path == first_error_path(event)


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_protobuf_writes_what_the_reference_accepts(codec, name: str) -> None:
    codec.encode_frame(ACCEPTED[name])
