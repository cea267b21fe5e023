"""The codec core: AG-UI events to and from protobuf frames and SSE, sans I/O.

Strategy: each direction and transport is a pure-Python module with a Cython twin
(``_<name>.pxi``, built into ``agui_wire._fast``); ``selected`` picks, per name, the
twin that runs. Contract: nothing here imports a layer above it (``agui_wire.schema``,
``errors`` and the media types are below; the decoders, readers, encoders and the HTTP
layers above); the twins never import ``selected`` (a kernel they need is passed in);
the extension calls back into Python only through the words of ``seam``.
``pyproject.toml`` ([tool.importlinter]) checks all three.
"""
