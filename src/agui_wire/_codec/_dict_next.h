/* PyDict_Next without the call, for the SSE writer's walks (_sse_writer_*.pxi), which
 * read every member of every dict they write: on CPython 3.11-3.13 a combined-table
 * dict's members are read straight from its entries, in the order PyDict_Next gives
 * them (skipping deleted entries), with the same position numbers. PyDict_Next is a
 * call into the interpreter per member, which checks the dict's kind each time: a
 * fifth of the time of writing a big state snapshot or a snapshot of messages (perf).
 *
 * The entries' layout is CPython's own (Include/internal/pycore_dict.h, mirrored
 * here): it is read only where it is known (3.11-3.13, a build with the GIL), and
 * agw_dict_next_check, run when the module loads, compares it with PyDict_Next on
 * dicts of both key kinds with deleted entries; if they differ, or elsewhere, or for
 * a split table (an instance's __dict__), it is PyDict_Next. Declared for Cython in
 * agui_wire/_capi.pxd. */
#ifndef AGW_DICT_NEXT_H
#define AGW_DICT_NEXT_H

#include <Python.h>
#include <stdint.h>

#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030E0000 && !defined(Py_GIL_DISABLED) \
    && !defined(Py_LIMITED_API) && !defined(PYPY_VERSION)
#define AGW_DICT_ENTRIES 1
#else
#define AGW_DICT_ENTRIES 0
#endif

#if AGW_DICT_ENTRIES
typedef struct { /* struct _dictkeysobject, 3.11-3.13 with the GIL */
    Py_ssize_t dk_refcnt;
    uint8_t dk_log2_size;
    uint8_t dk_log2_index_bytes;
    uint8_t dk_kind; /* 0: any keys (entries with their hash), 1: str keys, 2: split */
    uint32_t dk_version;
    Py_ssize_t dk_usable;
    Py_ssize_t dk_nentries;
    char dk_indices[];
} agw_dict_keys;
typedef struct { PyObject *key; PyObject *value; } agw_dict_str_entry;
typedef struct { Py_hash_t hash; PyObject *key; PyObject *value; } agw_dict_entry;

/* whether agw_dict_next_check found the layout to be the one above */
static int agw_dict_entries_ok = 0;
#endif

/* PyDict_Next of the exact dict `d`. */
static inline int agw_dict_next(PyObject *d, Py_ssize_t *pos, PyObject **key, PyObject **value) {
#if AGW_DICT_ENTRIES
    PyDictObject *mp = (PyDictObject *)d;
    if (agw_dict_entries_ok && mp->ma_values == NULL) {
        agw_dict_keys *dk = (agw_dict_keys *)mp->ma_keys;
        Py_ssize_t i = *pos, n = dk->dk_nentries;
        const char *entries = dk->dk_indices + ((size_t)1 << dk->dk_log2_index_bytes);
        if (i < 0) return 0;
        if (dk->dk_kind == 1) {
            const agw_dict_str_entry *e = (const agw_dict_str_entry *)entries;
            while (i < n && e[i].value == NULL) i++;
            if (i >= n) return 0;
            *key = e[i].key;
            *value = e[i].value;
        } else if (dk->dk_kind == 0) {
            const agw_dict_entry *e = (const agw_dict_entry *)entries;
            while (i < n && e[i].value == NULL) i++;
            if (i >= n) return 0;
            *key = e[i].key;
            *value = e[i].value;
        } else {
            return PyDict_Next(d, pos, key, value);
        }
        *pos = i + 1;
        return 1;
    }
#endif
    return PyDict_Next(d, pos, key, value);
}

#if AGW_DICT_ENTRIES
/* Whether agw_dict_next, reading the entries, walks `d` exactly as PyDict_Next does. */
static int agw_dict_next_agrees(PyObject *d) {
    Py_ssize_t a = 0, b = 0;
    PyObject *ka, *va, *kb, *vb;
    int ra, rb;
    if (((PyDictObject *)d)->ma_values != NULL) return 0;
    for (;;) {
        ra = PyDict_Next(d, &a, &ka, &va);
        rb = agw_dict_next(d, &b, &kb, &vb);
        if (ra != rb || a != b) return 0;
        if (!ra) return 1;
        if (ka != kb || va != vb) return 0;
    }
}
#endif

/* Reads the entries from now on if they are laid out as agw_dict_keys says (checked
 * against PyDict_Next on dicts of str keys and of other keys, with entries deleted);
 * 1 if it does, 0 if every dict goes through PyDict_Next, -1 with an exception. */
static int agw_dict_next_check(void) {
#if AGW_DICT_ENTRIES
    PyObject *str_keys = PyDict_New(), *any_keys = PyDict_New(), *k = NULL;
    long i;
    int ok = 0;
    if (str_keys == NULL || any_keys == NULL) goto done;
    for (i = 0; i < 40; i++) {
        k = PyUnicode_FromFormat("k%ld", i);
        if (k == NULL || PyDict_SetItem(str_keys, k, k) < 0) goto done;
        Py_CLEAR(k);
        k = PyLong_FromLong(i);
        if (k == NULL || PyDict_SetItem(any_keys, k, k) < 0) goto done;
        if (i % 3 == 0 && PyDict_DelItem(any_keys, k) < 0) goto done;
        Py_CLEAR(k);
        if (i % 4 == 1) {
            k = PyUnicode_FromFormat("k%ld", i - 1);
            if (k == NULL || PyDict_DelItem(str_keys, k) < 0) goto done;
            Py_CLEAR(k);
        }
    }
    if (((agw_dict_keys *)((PyDictObject *)str_keys)->ma_keys)->dk_kind != 1
        || ((agw_dict_keys *)((PyDictObject *)any_keys)->ma_keys)->dk_kind != 0)
        ok = 1; /* not the kinds expected: the layout is not the one above */
    else {
        agw_dict_entries_ok = 1;
        ok = agw_dict_next_agrees(str_keys) && agw_dict_next_agrees(any_keys) ? 2 : 1;
    }
done:
    Py_XDECREF(k);
    Py_XDECREF(str_keys);
    Py_XDECREF(any_keys);
    if (ok == 0) {
        agw_dict_entries_ok = 0;
        return -1;
    }
    agw_dict_entries_ok = ok == 2;
    return agw_dict_entries_ok;
#else
    return 0;
#endif
}

#endif /* AGW_DICT_NEXT_H */
