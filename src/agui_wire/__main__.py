"""``python -m agui_wire``: the ``agui-wire`` command line (``agui_wire._cli``)."""

from __future__ import annotations

import sys

from ._cli import main

if __name__ == "__main__":
    sys.exit(main())
