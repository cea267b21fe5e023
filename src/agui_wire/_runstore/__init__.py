"""The run store's core: what every backend of ``RunStore`` shares, none of it
talking to a store.

A backend (``agui_wire.redis``) imports this package; this package imports no
backend, and no backend imports another. The modules, one job each, each
importing only those before it:
``appends`` (events admitted as payloads and batched into appends).
"""
