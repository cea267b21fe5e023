# Cython twin of framing.py: the length-prefix framer. The contract (limits,
# payload lifetime, error order) is the module doc of framing.py; behaviour and
# error texts are identical (the error objects are built by framing.py's helpers),
# and tests/unit/test_framing.py runs both side by side.
#
# C strategy: the chunk is read through the buffer protocol without a copy; whole
# frames inside it become bytes (or memoryview slices of an immutable bytes chunk
# for payloads >= ZERO_COPY_MIN); an incomplete frame's body is appended to a
# malloc'd buffer that grows geometrically up to its declared length, never
# beyond what has actually arrived.

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from libc.stdint cimport uint32_t
from libc.stdlib cimport free, realloc
from libc.string cimport memcpy

from agui_wire._codec import seam as _seam

cdef enum:
    _FR_HEADER = 4
    # Keep at most this much body capacity between frames (a huge frame's buffer is freed).
    _FR_KEEP = 65536

cdef Py_ssize_t _FR_ZERO_COPY_MIN = _seam.ZERO_COPY_MIN
cdef unsigned long long _FR_MAX_FRAME_SIZE = _seam.schema.MAX_FRAME_PAYLOAD
cdef object _FR_DEFAULT_MAX_FRAME_SIZE = _seam.schema.DEFAULT_MAX_FRAME_SIZE


cdef inline uint32_t _fr_be32(const unsigned char* p) noexcept nogil:
    return ((<uint32_t>p[0]) << 24) | ((<uint32_t>p[1]) << 16) | ((<uint32_t>p[2]) << 8) | p[3]


def frame(payload):
    """frame(payload) -> bytes

    One frame: the 4-byte big-endian length of ``payload``, then ``payload``.
    Raises EncodeError for a payload longer than 0xFFFFFFFF bytes.
    """
    cdef Py_buffer view
    cdef unsigned long long n
    cdef bytes out
    cdef char* dst
    cdef const char* src
    if type(payload) is bytes:
        n = <unsigned long long>len(<bytes>payload)
        src = PyBytes_AS_STRING(payload)
        if n > _FR_MAX_FRAME_SIZE:
            raise _seam.EncodeError(_seam.too_long_to_frame(n))
        out = PyBytes_FromStringAndSize(NULL, <Py_ssize_t>n + _FR_HEADER)
        dst = PyBytes_AS_STRING(out)
        dst[0] = <char>((n >> 24) & 0xFF)
        dst[1] = <char>((n >> 16) & 0xFF)
        dst[2] = <char>((n >> 8) & 0xFF)
        dst[3] = <char>(n & 0xFF)
        if n:
            memcpy(dst + _FR_HEADER, src, <size_t>n)
        return out
    payload = memoryview(payload)
    n = <unsigned long long>payload.nbytes
    if n > _FR_MAX_FRAME_SIZE:
        raise _seam.EncodeError(_seam.too_long_to_frame(n))
    if not payload.c_contiguous:
        payload = payload.tobytes()
    PyObject_GetBuffer(payload, &view, PyBUF_SIMPLE)
    try:
        out = PyBytes_FromStringAndSize(NULL, view.len + _FR_HEADER)
        dst = PyBytes_AS_STRING(out)
        dst[0] = <char>((n >> 24) & 0xFF)
        dst[1] = <char>((n >> 16) & 0xFF)
        dst[2] = <char>((n >> 8) & 0xFF)
        dst[3] = <char>(n & 0xFF)
        if view.len:
            memcpy(dst + _FR_HEADER, view.buf, <size_t>view.len)
    finally:
        PyBuffer_Release(&view)
    return out


cdef class FrameReader:
    """FrameReader(max_frame_size=10485756)
--

    Incremental reader of length-prefixed frames (contract: agui_wire._codec.framing).
    """

    cdef unsigned long long _max
    cdef unsigned long long _frames
    cdef unsigned long long _offset
    cdef unsigned long long _fed
    cdef unsigned char _header[4]
    cdef Py_ssize_t _header_len
    cdef long long _need          # declared length of the frame being assembled, -1 if unknown
    cdef unsigned char* _body
    cdef Py_ssize_t _body_len
    cdef Py_ssize_t _body_cap
    cdef object _error
    cdef bint _closed
    cdef bint _decodes            # FrameDecoder: each frame goes to _decode_into

    def __cinit__(self):
        self._body = NULL
        self._body_len = 0
        self._body_cap = 0
        self._need = -1
        self._header_len = 0

    def __init__(self, max_frame_size=_FR_DEFAULT_MAX_FRAME_SIZE):
        self._init_reader(max_frame_size)

    cdef int _init_reader(self, object max_frame_size) except -1:
        # the default (the very object) needs no check: a Python call less per reader
        if max_frame_size is _FR_DEFAULT_MAX_FRAME_SIZE:
            self._max = max_frame_size
        else:
            self._max = _seam.check_max_frame_size(max_frame_size)
        self._frames = 0
        self._offset = 0
        self._fed = 0
        self._error = None
        self._closed = False
        return 0

    def __dealloc__(self):
        free(self._body)
        self._body = NULL

    @property
    def max_frame_size(self):
        """The largest payload accepted, in bytes."""
        return self._max

    @property
    def frames_read(self):
        """Complete frames handed out so far: the index of the next frame."""
        return self._frames

    @property
    def offset(self):
        """Stream byte offset where the next (not yet complete) frame starts."""
        return self._offset

    @property
    def bytes_fed(self):
        """Bytes passed to feed() so far."""
        return self._fed

    @property
    def buffered(self):
        """Bytes of an incomplete frame held back (0 between frames)."""
        return self._header_len + self._body_len + (_FR_HEADER if self._need >= 0 else 0)

    @property
    def pending_error(self):
        """The error this reader has hit (raised by the next call), or None."""
        return self._error

    @property
    def closed(self):
        return self._closed

    cdef void _reset_partial(self) noexcept:
        self._need = -1
        self._header_len = 0
        self._body_len = 0
        if self._body_cap > _FR_KEEP:
            free(self._body)
            self._body = NULL
            self._body_cap = 0

    cdef int _append_body(self, const unsigned char* src, Py_ssize_t n) except -1:
        # Grow geometrically, capped at the declared length: never more than 2x
        # what has arrived, never more than the frame needs.
        cdef Py_ssize_t want = self._body_len + n
        cdef Py_ssize_t cap
        cdef unsigned char* mem
        if n <= 0:
            return 0  # memcpy from/to NULL is undefined even for 0 bytes
        if want > self._body_cap:
            cap = self._body_cap * 2
            if cap < want:
                cap = want
            if cap < 256:
                cap = 256
            if cap > self._need:
                cap = <Py_ssize_t>self._need
            mem = <unsigned char*>realloc(self._body, <size_t>cap)
            if mem == NULL:
                raise MemoryError()
            self._body = mem
            self._body_cap = cap
        memcpy(self._body + self._body_len, src, <size_t>n)
        self._body_len = want
        return 0

    cdef int _decode_into(self, list out, const unsigned char* p, Py_ssize_t size,
                          object payload) except -1:
        # FrameDecoder's: the event of the payload at p (payload: its bytes, or None)
        raise NotImplementedError

    def feed(self, chunk):
        """feed(chunk) -> list[bytes | memoryview]

        Add chunk to the stream; return the payloads of the frames it completes.
        """
        return self._feed(chunk)

    cdef list _feed(self, object chunk):
        # The frames of chunk: payloads, or (FrameDecoder) what _decode_into makes of them.
        cdef Py_buffer view
        cdef const unsigned char* p
        cdef Py_ssize_t n, pos = 0, take
        cdef uint32_t size
        cdef bint zero_copy
        cdef object base = None
        cdef object payload
        cdef list out = []
        cdef unsigned long long start = self._frames
        if self._error is not None:
            raise self._error
        if self._closed:
            raise _seam.StreamClosed(_seam.FEED_AFTER_CLOSE)
        zero_copy = type(chunk) is bytes
        if not zero_copy:
            chunk = _seam.as_bytes_view(chunk)
        PyObject_GetBuffer(chunk, &view, PyBUF_SIMPLE)
        try:
            p = <const unsigned char*>view.buf
            n = view.len
            self._fed += <unsigned long long>n
            if self._need >= 0 or self._header_len > 0:
                # continue the frame left incomplete by the previous chunk
                if self._need < 0:
                    take = _FR_HEADER - self._header_len
                    if take > n:
                        take = n
                    if take > 0:
                        memcpy(self._header + self._header_len, p, <size_t>take)
                    self._header_len += take
                    pos = take
                    if self._header_len < _FR_HEADER:
                        return out
                    size = _fr_be32(self._header)
                    if size > self._max:
                        self._error = _seam.frame_too_large(self._frames, self._offset, size, self._max)
                        return self._settle(out, start)
                    self._header_len = 0
                    self._need = size
                take = <Py_ssize_t>(self._need - self._body_len)
                if take > n - pos:
                    take = n - pos
                if take > 0:
                    self._append_body(p + pos, take)
                    pos += take
                if self._body_len < self._need:
                    return out
                payload = PyBytes_FromStringAndSize(<char*>self._body, self._body_len)
                if self._decodes:
                    self._decode_into(out, <const unsigned char*>PyBytes_AS_STRING(payload),
                                      self._body_len, payload)
                else:
                    out.append(payload)
                self._frames += 1
                self._offset += <unsigned long long>(_FR_HEADER + self._need)
                self._reset_partial()
            while n - pos >= _FR_HEADER:
                size = _fr_be32(p + pos)
                if size > self._max:
                    self._error = _seam.frame_too_large(self._frames, self._offset, size, self._max)
                    return self._settle(out, start)
                if <unsigned long long>size > <unsigned long long>(n - pos - _FR_HEADER):
                    self._need = size
                    self._append_body(p + pos + _FR_HEADER, n - pos - _FR_HEADER)
                    pos = n
                    break
                if self._decodes:
                    # decoded from the chunk's memory (held by view): no payload object
                    self._decode_into(out, p + pos + _FR_HEADER, size, None)
                elif zero_copy and size >= <uint32_t>_FR_ZERO_COPY_MIN:
                    if base is None:
                        base = memoryview(chunk)
                    out.append(base[pos + _FR_HEADER : pos + _FR_HEADER + <Py_ssize_t>size])
                else:
                    out.append(PyBytes_FromStringAndSize(<const char*>p + pos + _FR_HEADER, size))
                self._frames += 1
                self._offset += <unsigned long long>size + _FR_HEADER
                pos += _FR_HEADER + <Py_ssize_t>size
            if pos < n:
                memcpy(self._header, p + pos, <size_t>(n - pos))
                self._header_len = n - pos
            return out
        finally:
            PyBuffer_Release(&view)

    cdef list _settle(self, list out, unsigned long long start):
        # Hand out the good frames; an error found after them waits for the next call
        # (raised now when this call completed none: start is frames_read before it).
        self._reset_partial()
        if self._frames == start:
            raise self._error
        return out

    def close(self):
        """close() -> None

        End of stream. Raises TruncatedStream if it ended inside a frame.
        """
        if self._error is not None:
            raise self._error
        if self._closed:
            return
        self._closed = True
        if self._need >= 0 or self._header_len > 0:
            self._error = _seam.frame_truncated(
                self._frames, self._offset, self._fed, self._header_len, self._need
            )
            self._reset_partial()
            raise self._error

    def __repr__(self):
        return (
            f"<FrameReader frames_read={self._frames} offset={self._offset} "
            f"buffered={self.buffered} max_frame_size={self._max}>"
        )
