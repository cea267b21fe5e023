# Cython twin of proto_reader.py, part 3 of 5: the event, in the order of
# proto_reader._Reader's methods (event, run_outcome, subagent_outcome, the repeated
# texts); strategy: _proto_reader_wire.pxi.

from libc.stdint cimport uint32_t, uint64_t
from libc.stdlib cimport free


cdef PyObject* _de_event(_DeState* d, _de_ptr p, Py_ssize_t n) noexcept:
    """The event dict of one payload (proto_reader.event); NULL for the reference."""
    cdef _DeOcc top[_DE_MAXNUM]
    cdef uint64_t seen
    cdef int arm
    cdef _DeRange whole
    cdef _DeRange one
    cdef _DeRange* owned = NULL
    cdef _DeBody payload = _de_one(&whole, p, p + n)
    cdef _DeBody sub
    cdef PyObject* out
    if n == 0:
        _de_fault(d, _DF_EMPTY, NULL, NULL)
        return NULL
    if _de_scan(d, payload, &_de_envelope, top, &seen) < 0:
        return NULL
    if seen == 0:
        _de_fault(d, _DF_NO_ARM, NULL, NULL)  # an unknown event, or none: _de_no_arm says
        return NULL
    if agw_popcount64(seen) > 1:
        _de_two_arms(d, 0, seen, payload)
        return NULL
    arm = agw_ctz64(seen)
    if _de_take(&top[arm], payload, arm, &one, &sub, &owned) < 0:
        return NULL
    out = _de_arm(d, &_de_events[arm], sub)
    free(owned)
    if out == NULL and d.fault.code == _DF_NO_BASE:
        d.fault.at = _de_tag_of(payload, arm, 2, False)
    return out


cdef PyObject* _de_arm(_DeState* d, _DeSpec* sp, _DeBody body) noexcept:
    # The arm message: its base event, its fields, the special shapes.
    cdef _DeOcc occ[_DE_MAXNUM]
    cdef uint64_t seen
    cdef _DeRange one
    cdef _DeRange* owned = NULL
    cdef _DeBody base
    cdef PyObject* out
    if _de_scan(d, body, sp, occ, &seen) < 0:
        return NULL
    if not (seen >> _DE_N_BASE) & 1:
        _de_fault(d, _DF_NO_BASE, NULL, NULL)   # located by _de_event
        d.fault.a = <uint64_t>(sp - _de_events)
        return NULL
    if _de_take(&occ[_DE_N_BASE], body, _DE_N_BASE, &one, &base, &owned) < 0:
        return NULL
    out = _de_arm_body(d, sp, occ, seen, body, base)
    free(owned)
    return out


cdef PyObject* _de_arm_body(_DeState* d, _DeSpec* sp, _DeOcc* occ, uint64_t seen, _DeBody body,
                            _DeBody base_body) noexcept:
    cdef _DeOcc base[_DE_MAXNUM]
    cdef uint64_t baseen
    cdef long declared = 0
    cdef PyObject* out
    cdef PyObject* v
    cdef int r
    if _de_scan(d, base_body, &_de_base, base, &baseen) < 0:
        return NULL
    if (baseen >> _DE_N_TYPE) & 1:
        declared = <int>(<uint32_t>base[_DE_N_TYPE].v)
    if declared != sp.type_value:
        # the base event declares another type: located at its last type field, else
        # at the base event
        if (baseen >> _DE_N_TYPE) & 1:
            _de_fault(d, _DF_TYPE, _de_tag_of(base_body, _DE_N_TYPE, 0, True), NULL)
        else:
            _de_fault(d, _DF_TYPE, _de_tag_of(body, _DE_N_BASE, 2, False), NULL)
        d.fault.a = <uint64_t>(sp - _de_events)
        d.fault.b = <uint64_t>(<uint32_t>declared)
        return NULL
    out = capi.PyDict_New()
    if out == NULL:
        return NULL
    r = capi.PyDict_SetItem(out, _DE_K_TYPE, sp.type_name)
    if r == 0:
        r = _de_put(d, sp, occ, seen, body, out)
    if r == 0 and sp.special == _DE_RUN_FINISHED:
        r = _de_outcome(d, occ, seen, body, out, _DE_N_RUN_OUTCOME, _DE_N_RUN_IDS,
                        _DE_N_RUN_INTERRUPTS)
    elif r == 0 and sp.special == _DE_SUBAGENT_FINISHED:
        r = _de_outcome(d, occ, seen, body, out, _DE_N_SUB_OUTCOME, _DE_N_SUB_IDS, 0)
    elif r == 0 and sp.special == _DE_TOOL_CALL_RESULT:
        if (seen >> _DE_N_TR_TEXT) & 1:
            if (seen >> _DE_N_TR_PARTS) & 1:
                # both string content and content parts
                _de_fault(d, _DF_TOOL_RESULT, _de_tag_of(body, _DE_N_TR_PARTS, 2, False), NULL)
                r = -1
                v = NULL
            else:
                v = _de_last_text(d, &occ[_DE_N_TR_TEXT], body, _DE_N_TR_TEXT)
        else:
            v = _de_parts(d, &occ[_DE_N_TR_PARTS], (seen >> _DE_N_TR_PARTS) & 1, body,
                          _DE_N_TR_PARTS)
        if r == 0:
            r = _de_set(out, _DE_K_CONTENT, v)
    if r == 0:
        r = _de_put(d, &_de_base, base, baseen, base_body, out)
    if r < 0:
        capi.Py_DECREF(out)
        return NULL
    return out


cdef int _de_outcome(_DeState* d, _DeOcc* occ, uint64_t seen, _DeBody body, PyObject* out,
                     int number, int ids_number, int interrupts_number) noexcept:
    """RUN_FINISHED / SUBAGENT_FINISHED: the outcome string and its payload lists
    back into the `outcome` object; without an outcome the lists stay top-level
    (proto_reader.run_outcome / subagent_outcome). interrupts_number 0: none."""
    cdef PyObject* outcome
    cdef PyObject* ids = NULL
    cdef PyObject* interrupts = NULL
    cdef int r = -1
    if (seen >> number) & 1:
        outcome = _de_last_text(d, &occ[number], body, number)
    else:
        outcome = _DE_EMPTY
        capi.Py_INCREF(outcome)
    if outcome == NULL:
        return -1
    ids = _de_texts(d, &occ[ids_number], (seen >> ids_number) & 1, body, ids_number, False)
    if ids != NULL and interrupts_number:
        interrupts = _de_texts(d, &occ[interrupts_number], (seen >> interrupts_number) & 1,
                               body, interrupts_number, True)
    if ids != NULL and (interrupts != NULL or not interrupts_number):
        r = _de_outcome_set(out, outcome, ids, interrupts,
                            _DE_K_PENDING if interrupts_number else _DE_K_INTERRUPT_IDS)
    capi.Py_DECREF(outcome)
    capi.Py_XDECREF(ids)
    capi.Py_XDECREF(interrupts)
    return r


cdef int _de_outcome_set(PyObject* out, PyObject* outcome, PyObject* ids, PyObject* interrupts,
                         PyObject* ids_key) noexcept:
    cdef PyObject* result
    cdef bint is_interrupt
    cdef int r
    if capi.PyUnicode_GET_LENGTH(outcome) == 0:
        if capi.PyList_GET_SIZE(ids) and capi.PyDict_SetItem(out, ids_key, ids) < 0:
            return -1
        if interrupts != NULL and capi.PyList_GET_SIZE(interrupts) \
                and capi.PyDict_SetItem(out, _DE_K_INTERRUPTS, interrupts) < 0:
            return -1
        return 0
    result = capi.PyDict_New()
    if result == NULL:
        return -1
    is_interrupt = interrupts != NULL and agw_str_eq_ascii(outcome, "interrupt", 9)
    r = capi.PyDict_SetItem(result, _DE_K_TYPE, outcome)
    if r == 0 and is_interrupt:
        r = capi.PyDict_SetItem(result, _DE_K_INTERRUPTS, interrupts)
    if r == 0 and capi.PyList_GET_SIZE(ids):
        r = capi.PyDict_SetItem(result, ids_key, ids)
    if r == 0 and not is_interrupt and interrupts != NULL and capi.PyList_GET_SIZE(interrupts):
        r = capi.PyDict_SetItem(result, _DE_K_INTERRUPTS, interrupts)
    if r == 0:
        r = capi.PyDict_SetItem(out, _DE_K_OUTCOME, result)
    capi.Py_DECREF(result)
    return r


cdef PyObject* _de_texts(_DeState* d, _DeOcc* o, bint present, _DeBody body, uint64_t number,
                         bint messages) noexcept:
    # Every occurrence of a repeated string (or Interrupt) field, as a list.
    cdef PyObject* lst
    cdef PyObject* item
    cdef _DeIter it
    cdef _DeRange one
    cdef _de_ptr s = NULL
    cdef _de_ptr e = NULL
    cdef Py_ssize_t j = 0
    if not present:
        return capi.PyList_New(0)
    lst = capi.PyList_New(o.count)
    if lst == NULL:
        return NULL
    _de_iter(&it, body)
    while j < o.count and _de_next(&it, number, &s, &e):
        if messages:
            item = _de_message(d, _de_interrupt_id, _de_one(&one, s, e))
        else:
            item = _de_text(d, s, e)
        if item == NULL:
            break
        capi.PyList_SET_ITEM(lst, j, item)
        j += 1
    if j != o.count:
        capi.Py_DECREF(lst)
        return NULL
    return lst
