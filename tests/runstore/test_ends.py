"""``agui_wire._runstore.ends``: the RUN_ERROR a run ends with after a failure, the
same from every backend, and never the producer's exception text."""

from __future__ import annotations

from agui_wire import PROTO_MEDIA_TYPE, decode
from agui_wire._codec.selected import frame
from agui_wire._runstore.ends import (
    CANCELLED,
    FAILED,
    FINISHED,
    LEASE_LAPSED,
    expired_payload,
    failure_event,
)
from agui_wire.errors import EncodeError, StoreFull


def test_the_run_error_of_each_failure() -> None:
    assert failure_event(None) == {
        "type": "RUN_ERROR",
        "message": "the run was cancelled on the server",
        "code": "CANCELLED",
    }
    assert failure_event(StoreFull("r", "OOM command not allowed"))["code"] == "STORE_FULL"
    assert failure_event(EncodeError("bad event"))["code"] == "ENCODE_ERROR"
    secret = failure_event(RuntimeError("db password is hunter2"))
    assert secret["code"] == "INTERNAL_ERROR"
    assert "hunter2" not in str(secret)


def test_a_lapsed_lease_names_the_lease() -> None:
    payload = expired_payload(0.6)
    assert payload is expired_payload(0.6)  # encoded once per lease
    (event,) = decode(frame(payload), PROTO_MEDIA_TYPE)
    assert event["code"] == "LEASE_EXPIRED"
    assert "within its lease of 0.6 s" in event["message"]


def test_the_end_reasons_are_the_ones_redis_stores() -> None:
    # the Lua scripts of agui_wire.redis write and read these literally
    assert (FINISHED, CANCELLED, FAILED, LEASE_LAPSED) == (
        "finished",
        "cancelled",
        "failed",
        "lease-expired",
    )
