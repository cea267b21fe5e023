/* The C twins' small C helpers, declared for Cython in agui_wire/_capi.pxd (next to
 * the raw C-API they use). Standard C and the CPython API only: what differs between
 * GCC/Clang and MSVC is in _portable.h. None runs Python code; only agw_utf8 can
 * fail (NULL and an exception: a str with a lone surrogate), and agw_ids_add run out
 * of memory (-1, no exception). */
#ifndef AGW_HELPERS_H
#define AGW_HELPERS_H

#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_portable.h" /* agw_popcount64, agw_ctz64, agw_prefetch_read */

/* Integer limits as C constants: Cython makes large literals Python ints. */
#define AGW_MAX_EXACT 9007199254740992LL    /* 2**53: a double holds it exactly */
#define AGW_MAX_SAFE 9007199254740991LL     /* 2**53 - 1: JS Number.MAX_SAFE_INTEGER */
#define AGW_MAX_EXACT_DOUBLE 9007199254740992.0 /* 2**53 as a double, for double compares */
#define AGW_U32_MAX 0xFFFFFFFFULL

/* str -> small int tables (the encoder's key lookup) */
static inline Py_hash_t agw_str_hash(PyObject *o) { return ((PyASCIIObject *)o)->hash; }
/* A cheap hash of a compact ASCII str's bytes (its length, its first and last 8),
   for a table's second index: a str just decoded has no cached hash, and SipHash
   of it would cost more than the lookup. -1: not compact ASCII. */
static inline Py_ssize_t agw_str_chash(PyObject *o) {
    Py_ssize_t n;
    const unsigned char *s;
    uint64_t a = 0, b = 0;
    if (!PyUnicode_IS_COMPACT_ASCII(o)) return -1;
    n = ((PyASCIIObject *)o)->length;
    s = (const unsigned char *)(((PyASCIIObject *)o) + 1);
    if (n >= 8) {
        memcpy(&a, s, 8);
        memcpy(&b, s + n - 8, 8);
    } else {
        memcpy(&a, s, (size_t)n);
    }
    a = (a ^ (uint64_t)n) * 0x9E3779B97F4A7C15ULL;
    b = (b + a) * 0xC2B2AE3D27D4EB4FULL;
    return (Py_ssize_t)((a ^ b) >> 33);
}
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
/* two str of any kind (a JSON key is short: up to 16 bytes compared inline) */
static inline int agw_str_eq(PyObject *a, PyObject *b) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(a);
    int kind = PyUnicode_KIND(a);
    size_t size = (size_t)n * (size_t)kind;
    const unsigned char *x, *y;
    uint64_t p, q, r, t;
    if (n != PyUnicode_GET_LENGTH(b) || kind != PyUnicode_KIND(b)) return 0;
    x = (const unsigned char *)PyUnicode_DATA(a);
    y = (const unsigned char *)PyUnicode_DATA(b);
    if (size >= 8 && size <= 16) {
        memcpy(&p, x, 8); memcpy(&q, y, 8);
        memcpy(&r, x + size - 8, 8); memcpy(&t, y + size - 8, 8);
        return p == q && r == t;
    }
    if (size >= 4 && size < 8) {
        uint32_t a, b, c, d;
        memcpy(&a, x, 4); memcpy(&b, y, 4);
        memcpy(&c, x + size - 4, 4); memcpy(&d, y + size - 4, 4);
        return a == b && c == d;
    }
    return memcmp(x, y, size) == 0;
}
/* a str and n ASCII bytes: equal only if the str is compact ASCII */
static inline int agw_str_eq_ascii(PyObject *a, const char *s, Py_ssize_t n) {
    return PyUnicode_IS_COMPACT_ASCII(a) && ((PyASCIIObject *)a)->length == n
        && memcmp(((PyASCIIObject *)a) + 1, s, (size_t)n) == 0;
}

/* A set of objects by identity (open addressing, linear probing, backward-shift
   deletion): the containers open on the way down a JSON value, so that a cycle is
   met as a container seen again (linear in the value's size), not by going round it
   until max_depth (once per lap over everything beside it). Zeroed is empty. */
typedef struct { PyObject **slot; size_t mask; Py_ssize_t n; } agw_ids;
static inline size_t agw_ids_at(const agw_ids *s, PyObject *o) {
    return (size_t)(((uint64_t)(uintptr_t)o * 0x9E3779B97F4A7C15ULL) >> 32) & s->mask;
}
static int agw_ids_has(const agw_ids *s, PyObject *o) {
    size_t i;
    if (s->n == 0) return 0;
    for (i = agw_ids_at(s, o); s->slot[i]; i = (i + 1) & s->mask)
        if (s->slot[i] == o) return 1;
    return 0;
}
/* 1: `o` was there already; 0: added; -1: out of memory */
static int agw_ids_add(agw_ids *s, PyObject *o) {
    size_t i;
    if (s->slot == NULL || (size_t)(s->n + 1) * 2 > s->mask + 1) {
        size_t cap = s->slot ? (s->mask + 1) * 2 : 64, j;
        PyObject **old = s->slot, **mem = (PyObject **)calloc(cap, sizeof(PyObject *));
        size_t oldcap = old ? s->mask + 1 : 0;
        if (mem == NULL) return -1;
        s->slot = mem;
        s->mask = cap - 1;
        for (j = 0; j < oldcap; j++) {
            if (old[j]) {
                for (i = agw_ids_at(s, old[j]); mem[i]; i = (i + 1) & s->mask) {}
                mem[i] = old[j];
            }
        }
        free(old);
    }
    for (i = agw_ids_at(s, o); s->slot[i]; i = (i + 1) & s->mask)
        if (s->slot[i] == o) return 1;
    s->slot[i] = o;
    s->n++;
    return 0;
}
static void agw_ids_del(agw_ids *s, PyObject *o) {
    size_t i, j, k;
    if (s->n == 0) return;
    for (i = agw_ids_at(s, o); s->slot[i] != o; i = (i + 1) & s->mask)
        if (!s->slot[i]) return;
    for (j = i;;) {     /* move back each later entry that may sit at i */
        j = (j + 1) & s->mask;
        if (!s->slot[j]) break;
        k = agw_ids_at(s, s->slot[j]);
        if ((j > i && (k <= i || k > j)) || (j < i && k <= i && k > j)) {
            s->slot[i] = s->slot[j];
            i = j;
        }
    }
    s->slot[i] = NULL;
    s->n--;
}
static inline void agw_ids_clear(agw_ids *s) {
    if (s->n) { memset(s->slot, 0, (s->mask + 1) * sizeof(PyObject *)); s->n = 0; }
}
static inline void agw_ids_free(agw_ids *s) { free(s->slot); s->slot = NULL; s->mask = 0; s->n = 0; }

#endif /* AGW_HELPERS_H */
