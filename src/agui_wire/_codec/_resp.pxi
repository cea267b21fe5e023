# Cython twin of resp.py: Redis commands as RESP. The contract (what each argument
# becomes, what is refused and with which error) is resp.py's module doc; the bytes
# are the same, and tests/differential/test_resp.py holds both to hiredis' and
# redis-py's packers.
#
# C strategy: two passes over the commands, with no Python code run between them.
# The first checks that the call is one packed here (an exact list or tuple of
# non-empty exact tuples or lists of exact bytes, exact str, exact int of 64 bits)
# and adds up its size; the second writes into one bytes object of exactly that
# size. A str's UTF-8 is read in place when it is compact ASCII, else from the
# str's own cache (the first pass fills it). Any other call goes to resp.py whole,
# before anything is written, so each refusal is worded there alone.

cimport cython
from cpython.bytes cimport PyBytes_AS_STRING
from cpython.pyport cimport PY_SSIZE_T_MAX

from agui_wire._codec import seam as _seam

cdef unsigned long long _rs_fallbacks = 0


cdef inline int _rs_digits(unsigned long long v) noexcept nogil:
    """How many decimal digits ``v`` has."""
    cdef int n = 1
    while v >= 100:
        v //= 100
        n += 2
    return n + (v >= 10)


cdef inline char* _rs_decimal(char* p, unsigned long long v, int n) noexcept nogil:
    """The ``n`` decimal digits of ``v`` written at ``p``; the end."""
    cdef char* q = p + n
    while True:
        q -= 1
        q[0] = <char>(48 + v % 10)
        v //= 10
        if v == 0:
            break
    return p + n


cdef inline unsigned long long _rs_magnitude(long long v) noexcept nogil:
    return <unsigned long long>v if v >= 0 else 0ULL - <unsigned long long>v


cdef inline Py_ssize_t _rs_arg_size(PyObject* arg) noexcept:
    """What ``$<len>\\r\\n<data>\\r\\n`` of one argument takes; -1: not packed here."""
    cdef Py_ssize_t n
    cdef long long v
    cdef int overflow = 0
    if capi.PyBytes_CheckExact(arg):
        n = capi.PyBytes_GET_SIZE(arg)
    elif capi.PyUnicode_CheckExact(arg):
        if agw_utf8(arg, &n) == NULL:
            capi.PyErr_Clear()  # a lone surrogate (or no memory): resp.py says which
            return -1
    elif capi.PyLong_CheckExact(arg):
        v = capi.PyLong_AsLongLongAndOverflow(arg, &overflow)
        if overflow:
            return -1
        n = (v < 0) + _rs_digits(_rs_magnitude(v))
    else:
        return -1
    return n + _rs_digits(<unsigned long long>n) + 5


cdef Py_ssize_t _rs_size(PyObject* commands) noexcept:
    """The packed size of ``commands``; -1 to hand the call over."""
    cdef Py_ssize_t size = 0, piece, k, i, j
    cdef PyObject** items
    cdef PyObject** args
    cdef PyObject* command
    if not (capi.PyList_CheckExact(commands) or capi.PyTuple_CheckExact(commands)):
        return -1  # (an iterator: resp.py reads it once)
    items = capi.PySequence_Fast_ITEMS(commands)
    for i in range(capi.PySequence_Fast_GET_SIZE(commands)):
        command = items[i]
        if not (capi.PyTuple_CheckExact(command) or capi.PyList_CheckExact(command)):
            return -1
        k = capi.PySequence_Fast_GET_SIZE(command)
        if k == 0:
            return -1
        args = capi.PySequence_Fast_ITEMS(command)
        if size > PY_SSIZE_T_MAX - 32:
            return -1
        size += 3 + _rs_digits(<unsigned long long>k)
        for j in range(k):
            piece = _rs_arg_size(args[j])
            if piece < 0 or size > PY_SSIZE_T_MAX - piece:
                return -1
            size += piece
    return size


cdef inline char* _rs_put(char* p, const char* end, PyObject* arg) noexcept:
    """``$<len>\\r\\n<data>\\r\\n`` of an argument the first pass took, written at
    ``p``; the end, or NULL when it would pass ``end``."""
    cdef Py_ssize_t n
    cdef const char* s = NULL
    cdef long long v = 0
    cdef int overflow = 0, digits = 0, width
    cdef unsigned long long m = 0
    if capi.PyBytes_CheckExact(arg):
        n = capi.PyBytes_GET_SIZE(arg)
        s = capi.PyBytes_AS_STRING(arg)
    elif capi.PyUnicode_CheckExact(arg):
        s = agw_utf8(arg, &n)  # cached by the first pass
        if s == NULL:
            capi.PyErr_Clear()
            return NULL
    else:
        v = capi.PyLong_AsLongLongAndOverflow(arg, &overflow)
        m = _rs_magnitude(v)
        digits = _rs_digits(m)
        n = (v < 0) + digits
    width = _rs_digits(<unsigned long long>n)
    if overflow or end - p < n + width + 5:
        return NULL
    p[0] = 36  # $
    p = _rs_decimal(p + 1, <unsigned long long>n, width)
    p[0] = 13
    p[1] = 10
    p += 2
    if s != NULL:
        agw_copy(<unsigned char*>p, s, n)
        p += n
    else:
        if v < 0:
            p[0] = 45  # -
            p += 1
        p = _rs_decimal(p, m, digits)
    p[0] = 13
    p[1] = 10
    return p + 2


cdef Py_ssize_t _rs_write(PyObject* commands, char* out, Py_ssize_t size) noexcept:
    """``commands`` (as ``_rs_size`` took them) written at ``out``; the bytes
    written, or -1 when they would pass ``size``."""
    cdef char* p = out
    cdef const char* end = out + size
    cdef Py_ssize_t k, i, j
    cdef int width
    cdef PyObject** items = capi.PySequence_Fast_ITEMS(commands)
    cdef PyObject** args
    cdef PyObject* command
    for i in range(capi.PySequence_Fast_GET_SIZE(commands)):
        command = items[i]
        k = capi.PySequence_Fast_GET_SIZE(command)
        args = capi.PySequence_Fast_ITEMS(command)
        width = _rs_digits(<unsigned long long>k)
        if end - p < width + 3:
            return -1
        p[0] = 42  # *
        p = _rs_decimal(p + 1, <unsigned long long>k, width)
        p[0] = 13
        p[1] = 10
        p += 2
        for j in range(k):
            p = _rs_put(p, end, args[j])
            if p == NULL:
                return -1
    return p - out


@cython.binding(False)     # a plain builtin: the cheapest call CPython has
def pack_commands(commands):
    """Every command of ``commands`` (a sequence of arguments) as a RESP array of
    bulk strings, concatenated (contract: agui_wire._codec.resp)."""
    global _rs_fallbacks
    cdef Py_ssize_t size = _rs_size(<PyObject*>commands)
    cdef object out
    if size < 0:
        _rs_fallbacks += 1
        return _seam.pack_commands(commands)
    out = capi.PyBytes_FromStringAndSize(NULL, size)
    if _rs_write(<PyObject*>commands, PyBytes_AS_STRING(out), size) != size:
        raise SystemError("pack_commands: the commands changed while they were packed")
    return out


def _resp_fallbacks():
    """How many calls pack_commands handed to resp.py (a refusal, a type packed
    there alone: a float, a bytearray, an int past 64 bits, a subclass) since
    import; for tests that check the C path covers the common shapes."""
    return _rs_fallbacks
