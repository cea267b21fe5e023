/* The C twins' small C helpers, declared for Cython in agui_wire/_capi.pxd (next to
 * the raw C-API they use). Standard C and the CPython API only: what differs between
 * GCC/Clang and MSVC is in _portable.h. None runs Python code; only agw_utf8 can
 * fail (NULL and an exception: a str with a lone surrogate). */
#ifndef AGW_HELPERS_H
#define AGW_HELPERS_H

#include <Python.h>
#include <string.h>

#include "_portable.h" /* agw_popcount64, agw_ctz64, agw_prefetch_read */

/* Integer limits as C constants: Cython makes large literals Python ints. */
#define AGW_MAX_EXACT 9007199254740992LL    /* 2**53: a double holds it exactly */
#define AGW_MAX_SAFE 9007199254740991LL     /* 2**53 - 1: JS Number.MAX_SAFE_INTEGER */
#define AGW_MAX_EXACT_DOUBLE 9007199254740992.0 /* 2**53 as a double, for double compares */
#define AGW_U32_MAX 0xFFFFFFFFULL

/* str -> small int tables (the encoder's key lookup) */
static inline Py_hash_t agw_str_hash(PyObject *o) { return ((PyASCIIObject *)o)->hash; }
static inline int agw_str_ready(PyObject *o) {
#if PY_VERSION_HEX < 0x030C0000
    return PyUnicode_IS_READY(o);
#else
    (void)o; return 1;
#endif
}
/* UTF-8 of a str: a compact ASCII string is its own UTF-8 (no call, no
   cache); anything else goes through the cached PyUnicode_AsUTF8AndSize. */
static inline const char *agw_utf8(PyObject *o, Py_ssize_t *n) {
    if (PyUnicode_IS_COMPACT_ASCII(o)) {
        *n = ((PyASCIIObject *)o)->length;
        return (const char *)(((PyASCIIObject *)o) + 1);
    }
    return PyUnicode_AsUTF8AndSize(o, n);
}
/* memcpy for the short strings JSON is full of: fixed-size moves, no call */
static inline void agw_copy(unsigned char *d, const char *s, Py_ssize_t n) {
    if (n <= 16) {
        if (n >= 8) { memcpy(d, s, 8); memcpy(d + n - 8, s + n - 8, 8); }
        else if (n >= 4) { memcpy(d, s, 4); memcpy(d + n - 4, s + n - 4, 4); }
        else { for (Py_ssize_t i = 0; i < n; i++) d[i] = (unsigned char)s[i]; }
    } else {
        memcpy(d, s, (size_t)n);
    }
}
/* two str of any kind */
static inline int agw_str_eq(PyObject *a, PyObject *b) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(a);
    int kind = PyUnicode_KIND(a);
    return n == PyUnicode_GET_LENGTH(b) && kind == PyUnicode_KIND(b)
        && memcmp(PyUnicode_DATA(a), PyUnicode_DATA(b), (size_t)n * (size_t)kind) == 0;
}
/* a str and n ASCII bytes: equal only if the str is compact ASCII */
static inline int agw_str_eq_ascii(PyObject *a, const char *s, Py_ssize_t n) {
    return PyUnicode_IS_COMPACT_ASCII(a) && ((PyASCIIObject *)a)->length == n
        && memcmp(((PyASCIIObject *)a) + 1, s, (size_t)n) == 0;
}

#endif /* AGW_HELPERS_H */
