"""Checking AG-UI events and streams against the 1.0 rules, with positions.

Strategy: three layers, each reporting ``Problem``s instead of raising, so one
pass over a capture finds every problem, not only the first.

* **Schema** (``validate_event``, ``_shapes``): every event against the
  ``@ag-ui/core`` 1.0.0 zod schemas (``EventSchemas``), ported rule for rule; an
  event has a schema error here exactly when ``EventSchemas.safeParse`` rejects
  it. Keys the (loose) schema does not name are notes.
* **Sequence** (``StreamValidator``, ``_sequence``): the client's
  ``verifyEvents`` (``@ag-ui/client`` 1.0.0) ported as a table of rules per event
  type; the first error is at the event where ``verifyEvents`` stops. Beyond the
  reference: every problem is reported (with recovery), and the end of the stream
  is checked (a run left open, an empty stream).
* **State** (``_state``, agui_wire's own): every ``STATE_DELTA`` and
  ``ACTIVITY_DELTA`` must apply to the state the stream built so far; the
  reference client drops a patch that fails with a console warning.

Every problem has a ``severity`` (``"error"`` or ``"note"``), a ``rule`` (a
stable dotted code, e.g. ``schema.required``, ``text.not-started``), the event
``index`` and stream byte ``offset`` (when the caller supplies offsets), a JSON
``path`` inside the event, and a ``message`` a person can act on.
tests/interop/test_cli_validate.py holds the schema and sequence layers to the
reference (zod and verifyEvents) on the corpus and on deliberately broken input.
"""

from __future__ import annotations

from .._problem import Problem
from .._shapes import EVENT_SHAPES, validate_event
from ._sequence import REFERENCE_SEQUENCE_RULES
from ._stream import StreamValidator, validate_stream

__all__ = [
    "EVENT_SHAPES",
    "REFERENCE_SEQUENCE_RULES",
    "Problem",
    "StreamValidator",
    "validate_event",
    "validate_stream",
]
