/* JSON text as orjson writes it, for the SSE writer (_sse_writer_*.pxi): strings with
 * orjson's escapes, integers, and doubles in orjson's layout. Standard C and the
 * CPython API only, no Python code runs; declared for Cython in agui_wire/_capi.pxd.
 *
 * Strings: '"' and '\\' escaped, U+0000-U+001F as \b \t \n \f \r or \u00xx, every
 * other code point as its UTF-8 (U+2028/U+2029, '/', DEL and non-ASCII raw), as
 * orjson.dumps and JSON.stringify write them. A str with a lone surrogate has no
 * UTF-8: -1, and the caller hands the event over (the pure twin words it).
 *
 * Doubles: the shortest digits that read back (Python's repr, the same digits orjson
 * writes), laid out as orjson 3.x does: decimal when the exponent of the first digit
 * is in [-5, 16) ("100.0", "0.00001", "1234567890123456.8"), else d[.ddd]e[+-]n
 * ("1e+16", "1e-6", "5e-324"); -0.0 keeps its sign. tests/differential holds both to
 * orjson.dumps. */
#ifndef AGW_JSON_OUT_H
#define AGW_JSON_OUT_H

#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_helpers.h" /* agw_ctz64, agw_copy */

#if defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2)
#include <emmintrin.h>
#define AGW_SSE2 1
#else
#define AGW_SSE2 0
#endif
/* A short string is read 16 bytes at once, past its end within its page; not under
 * AddressSanitizer, which (rightly) calls that an overflow of the object. */
#if defined(__SANITIZE_ADDRESS__)
#define AGW_OVERREAD 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AGW_OVERREAD 0
#endif
#endif
#ifndef AGW_OVERREAD
#define AGW_OVERREAD AGW_SSE2
#endif

/* The room agw_json_str needs for `s`: the most it writes (escapes are 6 bytes, UTF-8
 * at most 4, and the quotes) and room for one 16-byte store past a short string. */
static inline Py_ssize_t agw_json_str_max(PyObject *s) {
    return 6 * PyUnicode_GET_LENGTH(s) + 18;
}

static const char agw_hex[] = "0123456789abcdef";

/* The escape of an ASCII byte that needs one, written at `o`; its length. */
static inline Py_ssize_t agw_json_escape(unsigned char *o, unsigned char c) {
    o[0] = '\\';
    switch (c) {
    case '"': o[1] = '"'; return 2;
    case '\\': o[1] = '\\'; return 2;
    case '\b': o[1] = 'b'; return 2;
    case '\t': o[1] = 't'; return 2;
    case '\n': o[1] = 'n'; return 2;
    case '\f': o[1] = 'f'; return 2;
    case '\r': o[1] = 'r'; return 2;
    default:
        o[1] = 'u'; o[2] = '0'; o[3] = '0';
        o[4] = (unsigned char)agw_hex[c >> 4]; o[5] = (unsigned char)agw_hex[c & 15];
        return 6;
    }
}

/* Whether a 8-byte word holds a byte < 0x20, '"' or '\\' (SWAR). */
static inline int agw_json_word_dirty(uint64_t w) {
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    uint64_t q = w ^ 0x2222222222222222ULL, b = w ^ 0x5C5C5C5C5C5C5C5CULL;
    return (((w - ones * 0x20) & ~w) | ((q - ones) & ~q) | ((b - ones) & ~b)) & highs ? 1 : 0;
}

/* How many bytes from the start of `s` (n ASCII bytes) need no escape: 16 at a time
 * where SSE2 is there (every x86-64), 8 at a time (SWAR) elsewhere. */
static inline Py_ssize_t agw_json_clean_prefix(const unsigned char *s, Py_ssize_t n) {
    Py_ssize_t i = 0;
    uint64_t w;
#if AGW_SSE2
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
    const __m128i space = _mm_set1_epi8(0x20);
    while (i + 16 <= n) {
        __m128i v = _mm_loadu_si128((const __m128i *)(s + i));
        /* ASCII: a byte below 0x20 is below it as a signed byte too */
        __m128i bad = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote),
                                                _mm_cmpeq_epi8(v, backslash)),
                                   _mm_cmplt_epi8(v, space));
        int mask = _mm_movemask_epi8(bad);
        if (mask) return i + agw_ctz64((uint64_t)(unsigned)mask);
        i += 16;
    }
#endif
    while (i + 8 <= n) {
        memcpy(&w, s + i, 8);
        if (agw_json_word_dirty(w)) break;
        i += 8;
    }
    while (i < n && s[i] >= 0x20 && s[i] != '"' && s[i] != '\\') i++;
    return i;
}

/* agw_json_str past its inline case: any str. */
static AGW_NOINLINE Py_ssize_t agw_json_str_any(unsigned char *o, PyObject *s) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(s), i, k;
    unsigned char *p = o;
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    *p++ = '"';
    if (kind == PyUnicode_1BYTE_KIND) {
        const unsigned char *u = (const unsigned char *)data;
        if (PyUnicode_IS_ASCII(s)) {
            i = 0;
#if AGW_SSE2
            /* 16 bytes at a time, scanned and copied in one go (stored before the
               scan's answer: the room reserved holds a 16-byte store anywhere) */
            while (i + 16 <= n) {
                __m128i v = _mm_loadu_si128((const __m128i *)(u + i));
                __m128i bad = _mm_or_si128(
                    _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                                 _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
                    _mm_cmplt_epi8(v, _mm_set1_epi8(0x20)));
                int mask = _mm_movemask_epi8(bad);
                _mm_storeu_si128((__m128i *)p, v);
                if (mask) {
                    k = agw_ctz64((uint64_t)(unsigned)mask);
                    p += k;
                    i += k;
                    p += agw_json_escape(p, u[i++]);
                } else {
                    p += 16;
                    i += 16;
                }
            }
#endif
            while (i < n) {
                k = agw_json_clean_prefix(u + i, n - i);
                agw_copy(p, (const char *)(u + i), k);
                p += k;
                i += k;
                if (i < n) p += agw_json_escape(p, u[i++]);
            }
        } else {
            for (i = 0; i < n; i++) {
                unsigned char c = u[i];
                if (c >= 0x80) { *p++ = (unsigned char)(0xC0 | (c >> 6)); *p++ = (unsigned char)(0x80 | (c & 0x3F)); }
                else if (c < 0x20 || c == '"' || c == '\\') p += agw_json_escape(p, c);
                else *p++ = c;
            }
        }
    } else {
        for (i = 0; i < n; i++) {
            Py_UCS4 c = PyUnicode_READ(kind, data, i);
            if (c < 0x80) {
                if (c < 0x20 || c == '"' || c == '\\') p += agw_json_escape(p, (unsigned char)c);
                else *p++ = (unsigned char)c;
            } else if (c < 0x800) {
                *p++ = (unsigned char)(0xC0 | (c >> 6));
                *p++ = (unsigned char)(0x80 | (c & 0x3F));
            } else if (c < 0x10000) {
                if (c >= 0xD800 && c <= 0xDFFF) return -1;
                *p++ = (unsigned char)(0xE0 | (c >> 12));
                *p++ = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
                *p++ = (unsigned char)(0x80 | (c & 0x3F));
            } else {
                *p++ = (unsigned char)(0xF0 | (c >> 18));
                *p++ = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
                *p++ = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
                *p++ = (unsigned char)(0x80 | (c & 0x3F));
            }
        }
    }
    *p++ = '"';
    return p - o;
}

/* `s` as a JSON string at `o` (agw_json_str_max bytes free); the bytes written, or -1
 * for a lone surrogate. Inline only for the common short ASCII string with nothing to
 * escape, so that the writers it is inlined into stay small enough to be inlined in
 * turn (the JSON walk's loop then makes no call per member); anything else is a call. */
static AGW_ALWAYS_INLINE Py_ssize_t agw_json_str(unsigned char *o, PyObject *s) {
#if AGW_OVERREAD
    /* one load (the page the string is in holds 16 bytes from it, so reading past
       its end faults nothing), one store */
    if (PyUnicode_IS_COMPACT_ASCII(s)) {
        Py_ssize_t n = ((PyASCIIObject *)s)->length;
        const unsigned char *u = (const unsigned char *)(((PyASCIIObject *)s) + 1);
        if (n <= 16 && ((uintptr_t)u & 4095) <= 4096 - 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)u);
            __m128i bad = _mm_or_si128(
                _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                             _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
                _mm_cmplt_epi8(v, _mm_set1_epi8(0x20)));
            if (!(_mm_movemask_epi8(bad) & (int)((1u << n) - 1))) {
                o[0] = '"';
                _mm_storeu_si128((__m128i *)(o + 1), v);
                o[n + 1] = '"';
                return n + 2;
            }
        }
    }
#endif
    return agw_json_str_any(o, s);
}

/* The value of an exact int that fits one internal digit (30 bits: most JSON
 * integers), read without a call; 0 for any other (the caller asks the C-API). */
#if PY_VERSION_HEX >= 0x030C0000
static inline int agw_small_int(PyObject *o, long long *v) {
    if (!PyUnstable_Long_IsCompact((PyLongObject *)o)) return 0;
    *v = (long long)PyUnstable_Long_CompactValue((PyLongObject *)o);
    return 1;
}
#else
#if PY_VERSION_HEX < 0x030B0000
#include "longintrepr.h" /* 3.11 has it from Python.h */
#endif
static inline int agw_small_int(PyObject *o, long long *v) {
    Py_ssize_t size = Py_SIZE(o);
    if (size < -1 || size > 1) return 0;
    *v = (long long)size * (long long)((PyLongObject *)o)->ob_digit[0];
    return 1;
}
#endif

static const char agw_digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* The decimal digits of `v` at `o` (21 bytes free); their count. Two digits a step,
 * written backward from where the last one goes (no copy: a variable-length memcpy
 * is a library call). */
static inline Py_ssize_t agw_json_i64(unsigned char *o, long long v) {
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v, p = 10;
    Py_ssize_t k = 0, n = 1;
    unsigned char *t;
    if (v < 0) o[k++] = '-';
    if (u < 10) { o[k] = (unsigned char)('0' + u); return k + 1; }
    while (n < 20 && u >= p) { p *= 10; n++; }
    t = o + k + n;
    while (u >= 100) {
        unsigned r = (unsigned)(u % 100);
        u /= 100;
        t -= 2;
        memcpy(t, agw_digit_pairs + 2 * r, 2);
    }
    if (u >= 10) { t -= 2; memcpy(t, agw_digit_pairs + 2 * u, 2); }
    else *--t = (unsigned char)('0' + u);
    return k + n;
}

static const double agw_pow10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};

/* The common double, with at most 9 digits after the point and in the decimal layout
 * (1e-5 <= |d| < 1e15): the integer m and the least k with m / 10^k == d, which is
 * its shortest digits (fewer fractional digits cannot read back, and more would only
 * add zeros); written "m-with-a-point", 0 when it is not such a double. IEEE
 * division is correctly rounded and m, 10^k are exact doubles, so the test is exact. */
static inline Py_ssize_t agw_json_short_double(unsigned char *o, double d) {
    double a = d < 0 ? -d : d, y;
    long long m;
    Py_ssize_t k, n, i, digits;
    unsigned char tmp[24];
    if (!(a >= 1e-5 && a < 1e15)) return 0;
    for (k = 0; k < 10; k++) {
        y = a * agw_pow10[k];
        if (y >= 1e15) return 0; /* one integer at most rounds to d: ulp(y) <= 1/8 */
        m = (long long)(y + 0.5);
        if ((double)m / agw_pow10[k] == a) break;
    }
    if (k == 10) return 0;
    n = 0;
    do { tmp[n++] = (unsigned char)('0' + m % 10); m /= 10; } while (m);
    i = 0;
    if (d < 0) o[i++] = '-';
    if (n <= k) { /* 0.000ddd */
        o[i++] = '0'; o[i++] = '.';
        for (digits = k - n; digits > 0; digits--) o[i++] = '0';
        while (n) o[i++] = tmp[--n];
        return i;
    }
    while (n > k) o[i++] = tmp[--n];
    o[i++] = '.';
    if (k == 0) { o[i++] = '0'; return i; }
    while (n) o[i++] = tmp[--n];
    return i;
}

/* The finite double `d` at `o` (32 bytes free), as orjson writes it; the bytes written,
 * or -1 (no memory: an exception is set). */
static Py_ssize_t agw_json_double(unsigned char *o, double d) {
    char *r;
    char dg[32];
    const char *s;
    Py_ssize_t nd = 0, k = agw_json_short_double(o, d), seen = 0, before = -1, skipped = 0;
    Py_ssize_t point, i;
    long e10 = 0, e;
    int neg = 0;
    if (k) return k;
    r = PyOS_double_to_string(d, 'r', 0, 0, NULL);
    if (r == NULL) return -1;
    s = r;
    if (*s == '-') { neg = 1; s++; }
    for (; (*s >= '0' && *s <= '9') || *s == '.'; s++) {
        if (*s == '.') { before = seen; continue; }
        seen++;
        if (nd == 0 && *s == '0') { skipped++; continue; }
        if (nd < 31) dg[nd++] = *s;
    }
    if (before < 0) before = seen;
    if (*s == 'e' || *s == 'E') e10 = strtol(s + 1, NULL, 10);
    PyMem_Free(r);
    while (nd > 0 && dg[nd - 1] == '0') nd--;
    if (neg) o[k++] = '-';
    if (nd == 0) { memcpy(o + k, "0.0", 3); return k + 3; }
    point = before - skipped + e10;  /* the value is 0.<dg> times 10^point */
    e = (long)point - 1;             /* the exponent of the first digit */
    if (e >= -5 && e < 16) {
        if (point <= 0) {
            o[k++] = '0'; o[k++] = '.';
            for (i = 0; i < -point; i++) o[k++] = '0';
            memcpy(o + k, dg, (size_t)nd); k += nd;
        } else if (point >= nd) {
            memcpy(o + k, dg, (size_t)nd); k += nd;
            for (i = nd; i < point; i++) o[k++] = '0';
            o[k++] = '.'; o[k++] = '0';
        } else {
            memcpy(o + k, dg, (size_t)point); k += point;
            o[k++] = '.';
            memcpy(o + k, dg + point, (size_t)(nd - point)); k += nd - point;
        }
        return k;
    }
    o[k++] = (unsigned char)dg[0];
    if (nd > 1) { o[k++] = '.'; memcpy(o + k, dg + 1, (size_t)(nd - 1)); k += nd - 1; }
    o[k++] = 'e';
    o[k++] = e > 0 ? '+' : '-';
    return k + agw_json_i64(o + k, e > 0 ? e : -e);
}

#endif /* AGW_JSON_OUT_H */
