"""Serve one framework's test app under uvicorn: ``python serve.py APP PORT MODE``.

MODE: ``plain`` (the framework untouched), ``before`` (``agui_wire.install()``
before the framework is imported) or ``after`` (after it). The one line is all
that differs between the three servers.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import uvicorn

HERE = Path(__file__).resolve().parent


def main() -> None:
    app_name, port, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    sys.path.insert(0, str(HERE))
    if mode == "before":
        import agui_wire

        agui_wire.install()
    module = importlib.import_module(f"app_{app_name}")
    if mode == "after":
        import agui_wire

        agui_wire.install()
    elif mode not in ("plain", "before"):
        raise SystemExit(f"unknown mode {mode!r}")
    uvicorn.run(module.app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
