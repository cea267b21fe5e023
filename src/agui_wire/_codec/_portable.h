/* Compiler builtins behind one name each, so the C twins build with GCC and Clang
 * (Linux, musl, macOS) and with MSVC (Windows), which has none of the __builtin_*
 * calls. Included by _helpers.h, which the C twins reach through agui_wire/_capi.pxd. */
#ifndef AGW_PORTABLE_H
#define AGW_PORTABLE_H

#include <stdint.h>

#if defined(_MSC_VER) && !defined(__clang__) /* clang-cl has the builtins */
#include <intrin.h>
/* Not __popcnt64: it needs the POPCNT instruction, which not every x64 CPU has. */
static __inline int agw_popcount64(uint64_t x) {
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return (int)((x * 0x0101010101010101ULL) >> 56);
}
/* x != 0, as for __builtin_ctzll */
static __inline int agw_ctz64(uint64_t x) {
    unsigned long index;
    _BitScanForward64(&index, x);
    return (int)index;
}
#if defined(_M_X64)
#define agw_prefetch_read(p) _mm_prefetch((const char *)(p), _MM_HINT_T0)
#else
#define agw_prefetch_read(p) ((void)(p))
#endif
#define AGW_ALWAYS_INLINE __forceinline
#define AGW_NOINLINE __declspec(noinline)
#else
#define agw_popcount64(x) __builtin_popcountll(x)
#define agw_ctz64(x) __builtin_ctzll(x)
#define agw_prefetch_read(p) __builtin_prefetch(p)
#define AGW_ALWAYS_INLINE inline __attribute__((always_inline))
#define AGW_NOINLINE __attribute__((noinline))
#endif

#endif /* AGW_PORTABLE_H */
