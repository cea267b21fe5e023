# The raw CPython C-API the C twins (_codec/_*.pxi, included by _fast.pyx) call,
# declared once, by its C name: `from agui_wire cimport _capi as capi`,
# then `capi.PyDict_Next(...)`.
#
# Declared without Cython's automatic error checks (extern functions are noexcept)
# and on PyObject* rather than object, so Cython adds no reference counting: a
# PyObject* result is a borrowed reference (PyList_GET_ITEM, PyDict_GetItemWithError,
# PyErr_Occurred) or a new one the caller owns and hands on or releases itself
# (PyDict_New, PyList_New, PyUnicode_DecodeUTF8, PyLong_FromLongLong,
# PyFloat_FromDouble). Only the two `object` results are Cython-managed (a NULL
# result raises). None of these run Python code on the exact types they are used
# on, and every call site checks the result itself (in the encoder a failure is a
# BAIL to the pure twin, never a half-raised exception).
#
# Cython's own cpython.* declarations (with error checks, on object) stay where
# the twins cimport them; they are not repeated here.
#
# The twins' own C helpers (the agw_* names, in _codec/_helpers.h and, for what
# differs between GCC/Clang and MSVC, _codec/_portable.h) are declared at the end;
# _fast.pyx cimports them by name.

from cpython.ref cimport PyObject
from libc.stdint cimport uint64_t

cdef extern from "Python.h":
    # singletons and exception types (borrowed)
    PyObject* Py_None
    PyObject* Py_True
    PyObject* Py_False
    PyObject* PyExc_UnicodeDecodeError

    # reference counts
    void Py_INCREF(PyObject*)
    void Py_DECREF(PyObject*)
    void Py_XDECREF(PyObject*)

    # type tests: exact (one pointer compare) and subclass-aware
    bint PyDict_CheckExact(PyObject*)
    bint PyDict_Check(PyObject*)
    bint PyList_CheckExact(PyObject*)
    bint PyList_Check(PyObject*)
    bint PyTuple_CheckExact(PyObject*)
    bint PyTuple_Check(PyObject*)
    bint PyUnicode_CheckExact(PyObject*)
    bint PyUnicode_Check(PyObject*)
    bint PyLong_CheckExact(PyObject*)
    bint PyLong_Check(PyObject*)
    bint PyFloat_CheckExact(PyObject*)
    bint PyFloat_Check(PyObject*)
    bint PyBytes_Check(PyObject*)
    bint PyBytes_CheckExact(PyObject*)

    # dict
    PyObject* PyDict_New()                                      # new reference
    int PyDict_SetItem(PyObject*, PyObject*, PyObject*)
    int PyDict_DelItem(PyObject*, PyObject*)
    int PyDict_Contains(PyObject*, PyObject*)
    PyObject* PyDict_GetItemWithError(PyObject*, PyObject*)     # borrowed
    int PyDict_Next(PyObject*, Py_ssize_t*, PyObject**, PyObject**)
    Py_ssize_t PyDict_GET_SIZE(PyObject*)

    # list and tuple
    PyObject* PyList_New(Py_ssize_t)                            # new reference
    void PyList_SET_ITEM(PyObject*, Py_ssize_t, PyObject*)      # steals the item
    int PyList_Append(PyObject*, PyObject*)
    PyObject* PyList_GET_ITEM(PyObject*, Py_ssize_t)            # borrowed
    Py_ssize_t PyList_GET_SIZE(PyObject*)
    PyObject* PyTuple_GET_ITEM(PyObject*, Py_ssize_t)           # borrowed
    Py_ssize_t PyTuple_GET_SIZE(PyObject*)
    PyObject** PySequence_Fast_ITEMS(PyObject*)                 # an exact list or tuple
    Py_ssize_t PySequence_Fast_GET_SIZE(PyObject*)

    # str
    PyObject* PyUnicode_DecodeUTF8(const char*, Py_ssize_t, const char*)  # new reference
    Py_ssize_t PyUnicode_GET_LENGTH(PyObject*)
    int PyUnicode_KIND(PyObject*)
    void* PyUnicode_DATA(PyObject*)
    bint PyUnicode_IS_COMPACT_ASCII(PyObject*)

    # numbers
    PyObject* PyLong_FromLongLong(long long)                    # new reference
    PyObject* PyFloat_FromDouble(double)                        # new reference
    double PyFloat_AS_DOUBLE(PyObject*)
    long PyLong_AsLong(PyObject*)
    long PyLong_AsLongAndOverflow(PyObject*, int*)
    long long PyLong_AsLongLongAndOverflow(PyObject*, int*)
    unsigned long long PyLong_AsUnsignedLongLong(PyObject*)
    double PyLong_AsDouble(PyObject*)

    # bytes and buffers
    object PyBytes_FromStringAndSize(const char*, Py_ssize_t)   # Cython-managed
    char* PyBytes_AS_STRING(PyObject*)
    Py_ssize_t PyBytes_GET_SIZE(PyObject*)
    PyObject* PyBytes_FromStringAndSize_raw "PyBytes_FromStringAndSize" (const char*, Py_ssize_t)
    int _PyBytes_Resize(PyObject**, Py_ssize_t)     # -1: *obj freed and NULL
    int PyObject_GetBuffer(PyObject*, Py_buffer*, int)
    void PyBuffer_Release(Py_buffer*)
    object PyMemoryView_FromMemory(char*, Py_ssize_t, int)      # Cython-managed
    int PyBUF_READ

    # objects and errors
    Py_ssize_t PyObject_Hash(PyObject*)
    PyObject* PyErr_Occurred()                                  # borrowed
    void PyErr_Clear()
    int PyErr_ExceptionMatches(PyObject*)


cdef extern from "_codec/_helpers.h":
    # integer limits as C constants (Cython would make the literals Python ints);
    # 2**53 twice: as an integer for integer compares, as a double for doubles
    long long AGW_MAX_EXACT
    long long AGW_MAX_SAFE
    double AGW_MAX_EXACT_DOUBLE
    uint64_t AGW_U32_MAX

    # compiler builtins or their MSVC forms (_portable.h)
    int agw_popcount64(uint64_t)
    int agw_ctz64(uint64_t)                   # x != 0
    void agw_prefetch_read(const void*)

    # str internals (no call, no error): cached hash, readiness, UTF-8, equality
    Py_ssize_t agw_str_hash(PyObject*)
    Py_ssize_t agw_str_chash(PyObject*)           # -1: not compact ASCII
    bint agw_str_ready(PyObject*)
    const char* agw_utf8(PyObject*, Py_ssize_t*)   # NULL + exception: a lone surrogate
    bint agw_str_eq(PyObject*, PyObject*)
    bint agw_str_eq_ascii(PyObject*, const char*, Py_ssize_t)
    void agw_copy(unsigned char*, const char*, Py_ssize_t)

    # a set of objects by identity (the containers open in a JSON walk); zeroed is empty
    ctypedef struct agw_ids:
        Py_ssize_t n
    bint agw_ids_has(const agw_ids*, PyObject*)
    int agw_ids_add(agw_ids*, PyObject*)       # 1: there already, 0: added, -1: no memory
    void agw_ids_del(agw_ids*, PyObject*)
    void agw_ids_clear(agw_ids*)
    void agw_ids_free(agw_ids*)


cdef extern from "_codec/_dict_next.h":
    # PyDict_Next of an exact dict, reading its entries where their layout is known
    int agw_dict_next(PyObject*, Py_ssize_t*, PyObject**, PyObject**)
    int agw_dict_next_check() except -1    # once, before the first agw_dict_next
