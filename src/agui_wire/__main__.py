"""``python -m agui_wire``: the ``agui-wire`` command line (``agui_wire.cli``)."""

from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
