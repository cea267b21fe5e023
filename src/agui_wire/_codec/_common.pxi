# What every C twin may use without declaring it: _fast.pyx includes this file first.
#
# Contract: each _codec/_X.pxi stands alone beside this file. It cimports and imports
# what it uses itself (a cimport or import repeated in two files costs nothing); the
# parts _X_<part>.pxi of one twin share their C definitions (not their imports); a
# C name it takes from another twin is declared on a `# uses _Y.pxi: name, ...` line
# at its top, as an import would be (_fast.pyx includes that twin first).
# tests/contract/test_c_twins.py checks both on each file read alone, so a name that
# only include order provides fails there, not in a later reorder.
#
# Here: the raw C-API and the agw_* helpers (declared in agui_wire/_capi.pxd) and the
# values of schema.Kind, which the writer and the reader both switch on.

from cpython.ref cimport PyObject

from agui_wire cimport _capi as capi
from agui_wire._capi cimport (
    AGW_MAX_EXACT,
    AGW_MAX_SAFE,
    AGW_MAX_EXACT_DOUBLE,
    AGW_U32_MAX,
    agw_popcount64,
    agw_ctz64,
    agw_prefetch_read,
    agw_str_hash,
    agw_str_chash,
    agw_str_ready,
    agw_utf8,
    agw_str_eq,
    agw_str_eq_ascii,
    agw_copy,
    agw_ids,
    agw_ids_has,
    agw_ids_add,
    agw_ids_del,
    agw_ids_clear,
    agw_ids_free,
)

# schema.Kind values (compile-time constants for the switches; _de_init raises
# ImportError if the schema's differ)
cdef enum:
    _K_STRING = 1
    _K_INT64 = 2
    _K_BOOL = 3
    _K_VALUE = 4
    _K_STRUCT = 5
    _K_MESSAGE = 6
    _K_PATCH_OP = 7
