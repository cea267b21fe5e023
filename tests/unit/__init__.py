"""One file per module: its behaviour on its own (both implementations where there are two)."""
