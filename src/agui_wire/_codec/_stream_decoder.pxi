# Cython twin of stream_decoder.py: EventDecoder's two halves, one C call per chunk,
# the one-shots, and EventDecoder itself driving the C halves. The contract is the
# module doc of stream_decoder.py; whatever is not the common case (a refused frame,
# an event of a later protocol, max_events, an SSE chunk the fast path does not take)
# goes through stream_decoder.py's functions or the SSE reader itself, so both twins
# say and do the same; tests/unit/test_stream_decoder.py and
# tests/differential/test_stream_decoder.py hold them.
#
# C strategy: FrameDecoder is a FrameReader whose framing loop (_framing.pxi)
# hands each frame to _decode_into: a frame inside the chunk is decoded straight
# from the chunk's memory (no payload object, no list of them); from a refused
# one on, the chunk's payloads are collected and handed to decode_rest with the
# refusal (no payload is decoded twice). SSEDecoder takes a chunk of plain blocks
# (_sse_plain_blocks) without entering Python while its SSE parser is known to
# sit at a block start, and owes the parser the bytes and events it skipped
# until the parser is next used; a chunk of another buffer type is read there in
# place (buffer protocol, no copy), and what it leaves goes to the reader as a
# view, released before feed returns (a held error must not pin the buffer).

# uses _framing.pxi: FrameReader, _FR_HEADER, _FR_MAX_FRAME_SIZE, _fr_be32
# uses _proto_reader*.pxi: _DE_MAX_DEPTH, _de_decode, _de_ptr, decode_payload
# uses _sse_reader.pxi: _sse_plain_blocks, plain_sse_blocks

cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdint cimport uint32_t
from libc.string cimport memchr

from mmap import mmap as _fd_mmap

from agui_wire._codec import seam as _seam

# the defaults of the options, the very objects (a call that passes none is told by
# identity: no check needed)
cdef object _FD_BATCH = _seam.schema.DEFAULT_MAX_BATCH_EVENTS
cdef object _FD_SKIP = "skip"
cdef object _FD_ERROR = "error"
cdef object _FD_DEPTH = _seam.schema.DEFAULT_MAX_DEPTH
cdef object _FD_FRAME_SIZE = _seam.schema.DEFAULT_MAX_FRAME_SIZE
cdef object _FD_EVENT_SIZE = _seam.schema.DEFAULT_MAX_EVENT_SIZE
cdef object _FD_PROTO = _seam.PROTO_MEDIA_TYPE
cdef object _FD_SSE = _seam.SSE_MEDIA_TYPE


cdef class FrameDecoder(FrameReader):
    """FrameDecoder(max_frame_size=10485756, *, invalid_utf8="error", max_depth=1024,
    unknown_events="skip", max_events=None)
--

    Frames in, events out, per chunk (contract: agui_wire._codec.stream_decoder).
    """

    cdef const char* _errs           # the C decoder's: NULL (strict) or "replace"
    cdef long _depth                 # -1: options the C decoder does not take
    cdef object _decode              # decode_payload with the options bound
    cdef object _unknown
    cdef long long _limit            # max_events, -1 for none
    cdef unsigned long long _count
    cdef object _failed
    cdef list _rest                  # this call's payloads from the first refused one
    cdef object _refused             # what _rest[0] raised
    cdef unsigned long long _rest_index
    cdef unsigned long long _rest_offset

    def __init__(self, max_frame_size=_FD_FRAME_SIZE, *, invalid_utf8="error",
                 max_depth=_FD_DEPTH, unknown_events="skip", max_events=None):
        self._init_reader(max_frame_size)
        # the options are EventDecoder's, checked there
        self._decodes = True
        if invalid_utf8 is _FD_ERROR and max_depth is _FD_DEPTH:
            self._decode = decode_payload  # what bound_decoder gives, without the call
        else:
            self._decode = _seam.bound_decoder(decode_payload, invalid_utf8, max_depth)
        self._errs = NULL
        self._depth = -1
        if invalid_utf8 == "error" or invalid_utf8 == "replace":
            if invalid_utf8 == "replace":
                self._errs = "replace"
            if type(max_depth) is int and 1 <= max_depth <= _DE_MAX_DEPTH:
                self._depth = max_depth
        self._unknown = unknown_events
        self._limit = -1 if max_events is None else max_events
        self._count = 0
        self._failed = None
        self._rest = None
        self._refused = None

    @property
    def content_type(self):
        """The transport it reads."""
        return _FD_PROTO

    @property
    def events_read(self):
        """Events handed out so far."""
        return self._count

    @property
    def pending_error(self):
        """The error this decoder has hit (raised by the next call), or None."""
        return self._failed if self._failed is not None else self._error

    cdef int _decode_into(self, list out, const unsigned char* p, Py_ssize_t size,
                          object payload) except -1:
        if self._rest is not None:  # after a refused frame: decode_rest's
            if payload is None:
                payload = PyBytes_FromStringAndSize(<const char*>p, size)
            self._rest.append(payload)
            return 0
        try:
            event = None
            if self._depth >= 0:
                event = _de_decode(<_de_ptr>p, size, self._errs, self._depth, None)
            if event is None:  # no fault the C decoder can word: the bound decoder's call
                if payload is None:
                    payload = PyBytes_FromStringAndSize(<const char*>p, size)
                event = self._decode(payload)
        except _seam.DecodeError as exc:
            if payload is None:
                payload = PyBytes_FromStringAndSize(<const char*>p, size)
            self._rest = [payload]
            self._refused = exc
            self._rest_index = self._frames
            self._rest_offset = self._offset
            return 0
        out.append(event)
        return 0

    @cython.binding(False)     # a plain builtin method: the cheapest call CPython has
    def feed(self, chunk):
        """feed(chunk) -> list[dict]

        Add chunk to the stream; return the events of the frames it completes.
        """
        cdef list out
        if self._failed is not None:
            raise self._failed
        self._rest = None
        out = self._feed(chunk)
        if self._rest is not None:
            rest = self._rest
            refused = self._refused
            self._rest = None
            self._refused = None
            return self._deliver(out, _seam.decode_rest(
                out, rest, refused, self._rest_index, self._rest_offset, self._decode,
                self._unknown, 2,
            ))
        if self._limit >= 0 and self._count + <unsigned long long>len(out) > <unsigned long long>self._limit:
            return self._deliver(out, None)
        self._count += len(out)
        return out

    cdef list _deliver(self, list events, object error):
        if self._limit >= 0 and self._count + <unsigned long long>len(events) > <unsigned long long>self._limit:
            error = _seam.over_limit(events, self._count, self._limit, False)
        self._count += len(events)
        if error is not None:
            self._failed = error
            if not events:
                raise error
        return events

    def close(self):
        """close() -> list

        End of stream: [], or TruncatedStream if it ended inside a frame.
        """
        if self._failed is not None:
            raise self._failed
        FrameReader.close(self)
        return []


cdef class SSEDecoder:
    """SSEDecoder(*, max_event_size=10485760, invalid_utf8="error", max_depth=1024, max_events=None)
--

    SSE in, events out, per chunk (contract: agui_wire._codec.stream_decoder).
    """

    cdef object _reader              # the SSEEventReader
    cdef object _parser              # its SSEParser
    cdef Py_ssize_t _max_size
    cdef Py_ssize_t _max_brackets
    cdef bint _clean                 # the parser sits at a block start, nothing pending
    cdef Py_ssize_t _fed_due         # bytes and events the fast path took since the
    cdef Py_ssize_t _index_due       # parser was last told (_skip_blocks)
    cdef long long _limit
    cdef unsigned long long _count
    cdef object _failed

    def __init__(self, *, max_event_size=_FD_EVENT_SIZE, invalid_utf8="error",
                 max_depth=_FD_DEPTH, max_events=None):
        errors = "strict" if invalid_utf8 == "error" else "replace"
        self._reader = _seam.SSEEventReader(
            max_event_size=max_event_size, errors=errors, max_depth=max_depth,
            plain_blocks=plain_sse_blocks,
        )
        self._parser = self._reader.parser
        # the reader's own fast-path bounds (SSEEventReader.feed)
        self._max_size = self._parser._max
        self._max_brackets = self._reader._max_brackets
        self._clean = False  # the first chunk goes to the reader: it settles the BOM
        self._fed_due = 0
        self._index_due = 0
        self._limit = -1 if max_events is None else max_events
        self._count = 0
        self._failed = None

    cdef int _settle_due(self) except -1:
        if self._fed_due or self._index_due:
            self._parser._skip_blocks(self._fed_due, self._index_due)
            self._fed_due = 0
            self._index_due = 0
        return 0

    @property
    def reader(self):
        """The SSEEventReader (its parser: last_event_id, retry...)."""
        self._settle_due()
        return self._reader

    @property
    def content_type(self):
        """The transport it reads."""
        return _FD_SSE

    @property
    def events_read(self):
        """Events handed out so far."""
        return self._count

    @property
    def last_event_id(self):
        """The last id: seen (for Last-Event-ID on reconnect)."""
        return self._parser.last_event_id

    @property
    def pending_error(self):
        """The error this decoder has hit (raised by the next call), or None."""
        return self._failed if self._failed is not None else self._reader.pending_error

    @cython.binding(False)     # as FrameDecoder.feed
    def feed(self, chunk):
        """feed(chunk) -> list[dict]

        Add chunk to the stream; return the events it completes.
        """
        cdef list out
        cdef char* buf
        cdef Py_ssize_t n, end
        if self._failed is not None:
            raise self._failed
        if self._clean and type(chunk) is bytes:
            buf = PyBytes_AS_STRING(chunk)
            n = PyBytes_GET_SIZE(chunk)
            if memchr(buf, 13, <size_t>n) == NULL:  # no CR: SSEEventReader's fast path
                out = []
                end = _sse_plain_blocks(buf, n, 0, self._max_size, self._max_brackets, out)
                if end == n:  # the common case, inline (_after_plain's first branch)
                    self._fed_due += end
                    self._index_due += len(out)
                    if self._limit >= 0 and self._count + <unsigned long long>len(out) > <unsigned long long>self._limit:
                        return self._deliver(out)
                    self._count += len(out)
                    return out
                return self._after_plain(out, chunk, end, n)
        elif self._clean:
            return self._feed_buffer(chunk)
        self._settle_due()
        try:
            out = self._reader.feed(chunk)
        finally:
            self._clean = self._is_clean()
        return self._deliver(out)

    cdef list _feed_buffer(self, object chunk):
        # feed() of a chunk that is not bytes, at a block start: the fast path reads
        # the caller's buffer in place (no copy); what it leaves goes to the reader
        # as a view, which reads it a window at a time (never a copy of the chunk).
        cdef Py_buffer view
        cdef list out = []
        cdef Py_ssize_t n, end = 0
        cdef bint plain
        mv = _seam.as_bytes_view(chunk)  # a TypeError for what is not contiguous bytes
        try:
            PyObject_GetBuffer(mv, &view, PyBUF_SIMPLE)
            try:
                n = view.len
                plain = memchr(view.buf, 13, <size_t>n) == NULL  # no CR
                if plain:
                    end = _sse_plain_blocks(<char*>view.buf, n, 0, self._max_size,
                                            self._max_brackets, out)
            finally:
                PyBuffer_Release(&view)
            if plain:
                return self._after_plain(out, mv, end, n)
            self._settle_due()
            try:
                out = self._reader.feed(mv)
            finally:
                self._clean = self._is_clean()
            return self._deliver(out)
        finally:
            mv.release()  # a stored error's traceback must not pin the caller's buffer

    cdef list _after_plain(self, list out, object chunk, Py_ssize_t end, Py_ssize_t n):
        # the fast path took chunk[:end] (out): account for it; the reader reads the rest
        self._fed_due += end
        self._index_due += len(out)
        if end == n:
            if self._limit >= 0 and self._count + <unsigned long long>len(out) > <unsigned long long>self._limit:
                return self._deliver(out)
            self._count += len(out)
            return out
        self._settle_due()
        try:
            out = self._reader._rest(out, chunk, end)
        finally:
            self._clean = self._is_clean()
        return self._deliver(out)

    cdef bint _is_clean(self) except -1:
        return self._parser._at_block_start() and self._reader.pending_error is None

    cdef list _deliver(self, list events):
        if self._limit >= 0 and self._count + <unsigned long long>len(events) > <unsigned long long>self._limit:
            self._failed = _seam.over_limit(events, self._count, self._limit, True)
            if not events:
                raise self._failed
        self._count += len(events)
        return events

    def close(self):
        """close() -> list[dict]

        End of stream: the events still held, including a last one without a blank line.
        """
        if self._failed is not None:
            raise self._failed
        self._settle_due()
        self._clean = False
        return self._deliver(self._reader.close())


@cython.embedsignature(False)  # the docstring's line shows the defaults' values
def decode_proto(data, *, max_events=_FD_BATCH, unknown_events=_FD_SKIP,
                 invalid_utf8=_FD_ERROR, max_depth=_FD_DEPTH, max_frame_size=_FD_FRAME_SIZE,
                 max_event_size=_FD_EVENT_SIZE):
    """decode_proto(data, *, max_events=1000000, unknown_events="skip", invalid_utf8="error",
    max_depth=1024, max_frame_size=DEFAULT_MAX_FRAME_SIZE, max_event_size=DEFAULT_MAX_EVENT_SIZE)

    Every event in a buffer of binary frames (contract: agui_wire._codec.stream_decoder).
    """
    # C strategy: FrameDecoder.feed then close on one buffer, with no reader object:
    # the frames are cut and decoded straight from the buffer, a refused one and those
    # after it go to decode_rest, and the errors are built by the pure modules'
    # functions in the order the reader meets them. The options are checked here only
    # as far as taking the fast path needs; anything else (an invalid option, a file,
    # chunks) is this module's EventDecoder fed it and closed (decode_whole), which checks them.
    if (max_events is _FD_BATCH and unknown_events is _FD_SKIP and invalid_utf8 is _FD_ERROR
            and max_depth is _FD_DEPTH and max_frame_size is _FD_FRAME_SIZE
            and max_event_size is _FD_EVENT_SIZE):
        pass  # the defaults (the common call): nothing to check
    elif not (type(unknown_events) is str and (
                unknown_events == "skip" or unknown_events == "raw" or unknown_events == "raise")
            and type(invalid_utf8) is str and (invalid_utf8 == "error" or invalid_utf8 == "replace")
            and type(max_depth) is int and 1 <= max_depth <= _DE_MAX_DEPTH
            and type(max_frame_size) is int and 0 <= max_frame_size <= _FR_MAX_FRAME_SIZE
            and type(max_event_size) is int and max_event_size >= 1
            and (max_events is None or (type(max_events) is int and max_events >= 0))):
        return _seam.decode_whole(EventDecoder, _FD_PROTO, data, max_events, unknown_events,
                                 invalid_utf8, max_depth, max_frame_size, max_event_size)
    if type(data) is bytes:
        buf = data
    elif type(data) is bytearray or type(data) is memoryview or type(data) is _fd_mmap:
        buf = _seam.as_bytes_view(data)  # FrameReader's TypeError for a strided view
    else:
        return _seam.decode_whole(EventDecoder, _FD_PROTO, data, max_events, unknown_events,
                                 invalid_utf8, max_depth, max_frame_size, max_event_size)
    return _fd_decode_frames(buf, max_events, unknown_events, invalid_utf8, max_depth,
                             max_frame_size)


cdef list _fd_decode_frames(object buf, object max_events, object unknown_events,
                            object invalid_utf8, object max_depth, object max_frame_size):
    # decode_proto's C path: buf is bytes or a flat byte view; the options are valid
    cdef Py_buffer view
    cdef const unsigned char* p
    cdef Py_ssize_t n, pos = 0
    cdef uint32_t size = 0
    cdef unsigned long long index = 0, max_size, rest_index = 0, rest_offset = 0
    cdef const char* errs = NULL
    cdef long depth
    cdef long long limit = -1
    cdef list events = []
    cdef list rest = None
    cdef object payload, event, refused = None, decode = None, error = None
    if invalid_utf8 == "replace":
        errs = "replace"
    depth = max_depth
    max_size = max_frame_size
    if max_events is not None:
        limit = max_events
    PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE)
    try:
        p = <const unsigned char*>view.buf
        n = view.len
        while n - pos >= _FR_HEADER:
            size = _fr_be32(p + pos)
            if size > max_size:
                error = _seam.frame_too_large(index, pos, size, max_size)
                break
            if <unsigned long long>size > <unsigned long long>(n - pos - _FR_HEADER):
                break  # cut short: close()'s TruncatedStream, below
            if rest is not None:  # after a refused frame: decode_rest's
                rest.append(PyBytes_FromStringAndSize(<const char*>p + pos + _FR_HEADER, size))
            else:
                payload = None
                try:
                    event = _de_decode(<_de_ptr>(p + pos + _FR_HEADER), size, errs, depth, None)
                    if event is None:  # no fault the C decoder can word: the bound decoder's call
                        payload = PyBytes_FromStringAndSize(<const char*>p + pos + _FR_HEADER, size)
                        if decode is None:
                            decode = _seam.bound_decoder(decode_payload, invalid_utf8, max_depth)
                        event = decode(payload)
                    events.append(event)
                except _seam.DecodeError as exc:
                    if payload is None:
                        payload = PyBytes_FromStringAndSize(<const char*>p + pos + _FR_HEADER, size)
                    rest = [payload]
                    refused = exc
                    rest_index = index
                    rest_offset = pos
            index += 1
            pos += _FR_HEADER + <Py_ssize_t>size
    finally:
        PyBuffer_Release(&view)
    # what FrameDecoder.feed, pending_error and close() raise, in their order
    framing = error
    error = None
    if rest is not None:
        if decode is None:
            decode = _seam.bound_decoder(decode_payload, invalid_utf8, max_depth)
        # stacklevel 2: a skipped event warns at the caller (C has no frame)
        error = _seam.decode_rest(events, rest, refused, rest_index, rest_offset, decode,
                                  unknown_events, 2)
    if limit >= 0 and <unsigned long long>len(events) > <unsigned long long>limit:
        error = _seam.over_limit(events, 0, limit, False)
    if error is None:
        error = framing
    if error is None and pos < n:
        if n - pos < _FR_HEADER:
            error = _seam.frame_truncated(index, pos, n, n - pos, -1)
        else:
            error = _seam.frame_truncated(index, pos, n, 0, size)
    if error is not None:
        error.events = events
        raise error
    return events


# the SSE fast path's bounds with the default options: SSEEventReader's, read from
# one on first use (not while _fast loads)
cdef Py_ssize_t _FD_SSE_MAX_SIZE = -1
cdef Py_ssize_t _FD_SSE_MAX_BRACKETS = -1


@cython.embedsignature(False)  # the docstring's line shows the defaults' values
def decode_sse(data, *, max_events=_FD_BATCH, unknown_events=_FD_SKIP,
               invalid_utf8=_FD_ERROR, max_depth=_FD_DEPTH, max_frame_size=_FD_FRAME_SIZE,
               max_event_size=_FD_EVENT_SIZE):
    """decode_sse(data, *, max_events=1000000, unknown_events="skip", invalid_utf8="error",
    max_depth=1024, max_frame_size=DEFAULT_MAX_FRAME_SIZE, max_event_size=DEFAULT_MAX_EVENT_SIZE)

    Every event of a whole SSE capture (contract: agui_wire._codec.stream_decoder).
    """
    cdef object out
    if (type(data) is bytes and unknown_events is _FD_SKIP and invalid_utf8 is _FD_ERROR
            and max_depth is _FD_DEPTH and max_frame_size is _FD_FRAME_SIZE
            and max_event_size is _FD_EVENT_SIZE
            and (max_events is None or (type(max_events) is int and max_events >= 0))):
        out = _fd_plain_sse(data, max_events)
        if out is not None:
            return out
    return _seam.decode_whole(EventDecoder, _FD_SSE, data, max_events, unknown_events,
                              invalid_utf8, max_depth, max_frame_size, max_event_size)


cdef object _fd_plain_sse(bytes data, object max_events):
    # decode_sse's C path (the default options; max_events valid): the events of a
    # capture that is plain "data: <json>" blocks only, else None. Such a capture is
    # SSEDecoder's fast path from end to end (a fresh decoder takes it from the first
    # block, and close() then holds nothing); that path has no side effects, so
    # anything else starts over in an EventDecoder (decode_whole).
    global _FD_SSE_MAX_SIZE, _FD_SSE_MAX_BRACKETS
    cdef list out
    cdef char* buf = PyBytes_AS_STRING(data)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(data)
    if _FD_SSE_MAX_SIZE < 0:
        reader = _seam.SSEEventReader()
        _FD_SSE_MAX_BRACKETS = reader._max_brackets
        _FD_SSE_MAX_SIZE = reader.parser._max
    if memchr(buf, 13, <size_t>n) != NULL:  # a CR: not the fast path's
        return None
    out = []
    if _sse_plain_blocks(buf, n, 0, _FD_SSE_MAX_SIZE, _FD_SSE_MAX_BRACKETS, out) != n:
        return None
    if max_events is not None and len(out) > max_events:
        return None
    return out


@cython.embedsignature(False)  # the docstring's line shows the defaults' values
def decode(source, content_type=None, *, max_events=_FD_BATCH, **options):
    """decode(source, content_type=None, *, max_events=1000000, **options) -> list[dict]

    Every event of a whole capture (bytes, a binary file, or chunks), the format
    sniffed unless content_type is given (contract: agui_wire._codec.stream_decoder).
    """
    # C strategy: bytes with no options go to decode_proto's or decode_sse's C path
    # (the transport sniffed by sources.sniff when none is given); anything else,
    # or what those paths do not take, is this module's EventDecoder fed it and closed.
    cdef object kind = content_type
    cdef object out
    if (not options and type(source) is bytes
            and (max_events is None or (type(max_events) is int and max_events >= 0))):
        if kind is None:
            try:
                kind = _seam.sniff(source)
            except _seam.DecodeError:
                kind = None  # the EventDecoder's to raise, as its feed does
        if type(kind) is str:
            if kind == _FD_PROTO:
                return _fd_decode_frames(source, max_events, _FD_SKIP, _FD_ERROR, _FD_DEPTH,
                                         _FD_FRAME_SIZE)
            if kind == _FD_SSE:
                out = _fd_plain_sse(source, max_events)
                if out is not None:
                    return out
    return _seam.decode_all(EventDecoder(content_type, max_events=max_events, **options), source)


class EventDecoder(_seam.EventDecoder):
    """EventDecoder(content_type=None, *, unknown_events="skip", invalid_utf8="error",
    max_depth=1024, max_frame_size=DEFAULT_MAX_FRAME_SIZE,
    max_event_size=DEFAULT_MAX_EVENT_SIZE, max_events=None)

    Sans-I/O decoder of one AG-UI stream (contract: agui_wire._codec.stream_decoder),
    starting the C FrameDecoder and SSEDecoder above.
    """

    __slots__ = ()
    readers = _seam.Readers(FrameDecoder, SSEDecoder)
