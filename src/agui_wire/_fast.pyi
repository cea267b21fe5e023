# Type stubs of the Cython extension agui_wire._fast. Each section mirrors one
# include file of _fast.pyx and the pure-Python twin that documents its contract.

from agui_wire.errors import DecodeError

# ---------------------------------------------------------------------------
# _framer.pxi (twin: agui_wire.framing)
# ---------------------------------------------------------------------------

def frame(payload: bytes | bytearray | memoryview) -> bytes:
    """One frame: the 4-byte big-endian length of ``payload``, then ``payload``."""

class FrameReader:
    """Incremental reader of length-prefixed frames (contract: agui_wire.framing)."""

    def __init__(self, max_frame_size: int = ...) -> None: ...
    @property
    def max_frame_size(self) -> int: ...
    @property
    def frames_read(self) -> int: ...
    @property
    def offset(self) -> int: ...
    @property
    def bytes_fed(self) -> int: ...
    @property
    def buffered(self) -> int: ...
    @property
    def pending_error(self) -> DecodeError | None: ...
    @property
    def closed(self) -> bool: ...
    def feed(self, chunk: bytes | bytearray | memoryview) -> list[bytes | memoryview]: ...
    def close(self) -> None: ...

# ---------------------------------------------------------------------------
# _encoder.pxi (twin: agui_wire.proto_writer) -- added with the encoder
# ---------------------------------------------------------------------------

# ---------------------------------------------------------------------------
# _decoder.pxi (twin: agui_wire.proto_reader) -- added with the decoder
# ---------------------------------------------------------------------------
