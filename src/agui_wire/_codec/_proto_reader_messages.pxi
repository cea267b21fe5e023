# Cython twin of proto_reader.py, part 2 of 5: messages, JSON values, oneofs, content
# parts and chat messages, in the order of proto_reader._Reader's methods of those
# names (strategy: _proto_reader_wire.pxi).

from libc.stdint cimport uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc


# -- messages (put_fields, field_value, message) ---------------------------------------

cdef int _de_put(_DeState* d, _DeSpec* sp, _DeOcc* occ, uint64_t seen, _DeBody body,
                 PyObject* out) noexcept:
    """Set the 1:1 JSON keys of `sp` (proto_reader.put_fields)."""
    cdef int i, r
    cdef _DeField* f
    cdef PyObject* v
    for i in range(sp.nfields):
        f = &sp.fields[i]
        if not (seen >> f.number) & 1:
            if f.repeated:
                if not f.omit_empty:
                    v = capi.PyList_New(0)
                    if v == NULL:
                        return -1
                    r = capi.PyDict_SetItem(out, f.key, v)
                    capi.Py_DECREF(v)
                    if r < 0:
                        return -1
            elif f.dflt != NULL and capi.PyDict_SetItem(out, f.key, f.dflt) < 0:
                return -1
            continue
        if f.kind == _K_STRING and not f.repeated and occ[f.number].count == 1:
            v = _de_cached_text(d, f, occ[f.number].s, occ[f.number].e)    # the common case
        else:
            v = _de_field_value(d, f, &occ[f.number], body)
        if v == NULL:
            return -1
        if v != _DE_ABSENT:
            r = capi.PyDict_SetItem(out, f.key, v)
        else:
            r = 0
        capi.Py_DECREF(v)
        if r < 0:
            return -1
    return 0


cdef PyObject* _de_field_value(_DeState* d, _DeField* f, _DeOcc* o, _DeBody body) noexcept:
    """A present field's JSON value (proto_reader.field_value)."""
    cdef PyObject* r
    cdef PyObject* item
    cdef _DeIter it
    cdef _DeRange one
    cdef _DeRange* owned = NULL
    cdef _DeBody sub
    cdef _de_ptr s = NULL
    cdef _de_ptr e = NULL
    cdef Py_ssize_t j = 0
    cdef int v32
    if f.repeated:
        r = capi.PyList_New(o.count)
        if r == NULL:
            return NULL
        if o.count == 1:
            item = _de_item(d, f, o.s, o.e)
            if item == NULL:
                capi.Py_DECREF(r)
                return NULL
            capi.PyList_SET_ITEM(r, 0, item)
            return r
        _de_iter(&it, body)
        while j < o.count and _de_next(&it, f.number, &s, &e):
            item = _de_item(d, f, s, e)
            if item == NULL:
                capi.Py_DECREF(r)
                return NULL
            capi.PyList_SET_ITEM(r, j, item)
            j += 1
        if j != o.count:
            capi.Py_DECREF(r)
            return NULL
        return r
    if f.kind == _K_STRING:
        return _de_last_text(d, o, body, f.number)
    if f.kind == _K_INT64:
        return capi.PyLong_FromLongLong(<long long>o.v)
    if f.kind == _K_BOOL:
        r = capi.Py_True if o.v else capi.Py_False
        capi.Py_INCREF(r)
        return r
    if f.kind == _K_PATCH_OP:  # an int32 enum
        v32 = <int>(<uint32_t>o.v)
        if 0 <= v32 < _de_nops:
            capi.Py_INCREF(_de_ops[v32])
            return _de_ops[v32]
        return _de_op_text(v32)
    if _de_take(o, body, f.number, &one, &sub, &owned) < 0:
        return NULL
    if f.kind == _K_VALUE:
        r = _de_value(d, sub)
    elif f.kind == _K_STRUCT:
        r = _de_struct(d, sub)
    else:
        r = _de_message(d, f.sub, sub)
    free(owned)
    return r


cdef PyObject* _de_item(_DeState* d, _DeField* f, _de_ptr s, _de_ptr e) noexcept:
    # One element of a repeated field.
    cdef _DeRange one
    if f.kind == _K_STRING:
        return _de_text(d, s, e)
    return _de_message(d, f.sub, _de_one(&one, s, e))


cdef PyObject* _de_op_text(int v) noexcept:
    # An op number this version does not name: its decimal text, as str(v).
    cdef object text
    try:
        text = str(v)
    except BaseException:
        return NULL
    capi.Py_INCREF(<PyObject*>text)
    return <PyObject*>text


cdef PyObject* _de_message(_DeState* d, int idx, _DeBody body) noexcept:
    """A nested message as JSON, or _DE_ABSENT when JSON drops it."""
    cdef _DeSpec* sp = &_de_specs[idx]
    cdef _DeOcc occ[_DE_MAXNUM]
    cdef uint64_t seen
    cdef PyObject* out
    if sp.special == _DS_PART:
        return _de_variant(d, sp, _de_part_arm, body, True)
    if sp.special == _DS_SOURCE:
        return _de_variant(d, sp, _de_source_arm, body, False)
    if _de_scan(d, body, sp, occ, &seen) < 0:
        return NULL
    out = capi.PyDict_New()
    if out == NULL:
        return NULL
    if _de_put(d, sp, occ, seen, body, out) < 0 \
            or (sp.special == _DS_CHAT and _de_chat(d, occ, seen, body, out) < 0):
        capi.Py_DECREF(out)
        return NULL
    return out


# -- JSON values (head, entry, run, value, struct) -------------------------------------

cdef int _de_push(_DeState* d, PyObject* target, int kind, _DeHead* h, long level) noexcept:
    """Open a container frame for h's body; steals `target` and h.more."""
    cdef Py_ssize_t cap
    cdef void* mem
    cdef _DeFrame* f
    if d.nframes == d.cap:
        cap = d.cap * 2 if d.cap else 64
        mem = realloc(d.frames, <size_t>cap * sizeof(_DeFrame))
        if mem == NULL:
            capi.Py_XDECREF(target)
            free(h.more)
            h.more = NULL
            return -1
        d.frames = <_DeFrame*>mem
        d.cap = cap
    f = &d.frames[d.nframes]
    d.nframes += 1
    f.target = target
    f.kind = kind
    f.level = level
    f.more = h.more
    if h.more != NULL:
        f.nmore = h.nmore
        f.p = h.more[0].s
        f.end = h.more[0].e
        f.imore = 1
    else:
        f.nmore = 0
        f.p = h.s
        f.end = h.e
        f.imore = 0
    h.more = NULL
    return 0


cdef void _de_unwind(_DeState* d, Py_ssize_t base) noexcept:
    cdef _DeFrame* f
    while d.nframes > base:
        d.nframes -= 1
        f = &d.frames[d.nframes]
        capi.Py_XDECREF(f.target)
        free(f.more)


cdef int _de_head_final(_DeState* d, int number, uint64_t v, _de_ptr s, _de_ptr e,
                        _DeHead* h) noexcept:
    h.more = NULL
    if number == _DV_STRUCT or number == _DV_LIST:
        h.kind = number
        h.s = s
        h.e = e
        return 0
    h.kind = 1
    if number == _DV_NULL:
        h.obj = capi.Py_None            # null_value, whatever its varint says
        capi.Py_INCREF(h.obj)
    elif number == _DV_NUMBER:
        h.obj = _de_number(s)
    elif number == _DV_STRING:
        h.obj = _de_text(d, s, e)
    else:                           # _DV_BOOL
        h.obj = capi.Py_True if v else capi.Py_False
        capi.Py_INCREF(h.obj)
    return 0 if h.obj != NULL else -1


cdef int _de_head_slow(_DeState* d, _DeBody body, long level, Py_ssize_t nk, _DeHead* h) noexcept:
    """A Value with several kind occurrences (proto_reader._Reader.head): the last
    kind wins, a trailing run of struct/list occurrences merges, and what is
    replaced is still validated (strings decoded, containers walked)."""
    cdef _DeSpan* spans = <_DeSpan*>malloc(<size_t>nk * sizeof(_DeSpan))
    cdef _de_ptr p
    cdef _de_ptr end
    cdef _de_ptr fs = NULL
    cdef _de_ptr fe = NULL
    cdef uint64_t n, v = 0
    cdef int wt, r = -1
    cdef Py_ssize_t k = 0, run, i, b
    cdef PyObject* t
    cdef _DeHead replaced
    cdef _de_ptr at
    if spans == NULL:
        return -1
    for b in range(body.n):
        p = body.spans[b].s
        end = body.spans[b].e
        while p < end and k < nk:
            at = p
            if _de_field(&p, end, &n, &wt, &v, &fs, &fe) < 0:
                break
            if 1 <= n < _DV_MAX and wt == _DE_VWT[n]:
                spans[k].number = <int>n
                spans[k].v = v
                spans[k].s = fs
                spans[k].e = fe
                spans[k].at = at
                k += 1
    if k != nk:
        free(spans)
        return -1
    run = nk - 1
    if spans[run].number == _DV_STRUCT or spans[run].number == _DV_LIST:
        while run > 0 and spans[run - 1].number == spans[nk - 1].number:
            run -= 1
    for i in range(run):
        if spans[i].number == _DV_STRING:
            t = _de_text(d, spans[i].s, spans[i].e)
            if t == NULL:
                free(spans)
                return -1
            capi.Py_DECREF(t)
        elif spans[i].number == _DV_STRUCT or spans[i].number == _DV_LIST:
            # replaced, still walked: a frame without a target
            if level + 1 > d.max_depth:
                _de_fault(d, _DF_DEPTH, spans[i].at, NULL)
                free(spans)
                return -1
            replaced.s = spans[i].s
            replaced.e = spans[i].e
            replaced.more = NULL
            if _de_push(d, NULL, spans[i].number, &replaced, level + 1) < 0:
                free(spans)
                return -1
    if run < nk - 1:
        h.kind = spans[nk - 1].number
        h.nmore = nk - run
        h.more = <_DeRange*>malloc(<size_t>h.nmore * sizeof(_DeRange))
        if h.more != NULL:
            for i in range(run, nk):
                h.more[i - run].s = spans[i].s
                h.more[i - run].e = spans[i].e
            r = 0
    else:
        r = _de_head_final(d, spans[nk - 1].number, spans[nk - 1].v, spans[nk - 1].s,
                           spans[nk - 1].e, h)
    free(spans)
    return r


cdef inline int _de_head(_DeState* d, _DeBody body, long level, _DeHead* h) noexcept:
    """The kind a google.protobuf.Value body holds, and its payload."""
    cdef _de_ptr p
    cdef _de_ptr end
    cdef _de_ptr fs = NULL
    cdef _de_ptr fe = NULL
    cdef _de_ptr ls = NULL
    cdef _de_ptr le = NULL
    cdef _de_ptr at
    cdef uint64_t n, v = 0, lv = 0
    cdef int wt, ln = 0
    cdef Py_ssize_t nk = 0, b
    for b in range(body.n):
        p = body.spans[b].s
        end = body.spans[b].e
        while p < end:
            at = p
            if _de_field(&p, end, &n, &wt, &v, &fs, &fe) < 0:
                _de_wire_fault(d, at, end)
                return -1
            if 1 <= n < _DV_MAX and wt == _DE_VWT[n]:
                nk += 1
                ln = <int>n
                lv = v
                ls = fs
                le = fe
    if nk == 0:
        h.kind = 0
        h.more = NULL
        return 0
    if nk > 1:
        return _de_head_slow(d, body, level, nk, h)
    return _de_head_final(d, ln, lv, ls, le, h)


cdef int _de_entry(_DeState* d, _de_ptr s, _de_ptr e, long level, PyObject** key,
                   _DeHead* h) noexcept:
    """A Struct map entry: its key (last wins, all validated) and the head of
    its value (occurrences merged)."""
    cdef _de_ptr p = s
    cdef _de_ptr fs = NULL
    cdef _de_ptr fe = NULL
    cdef _de_ptr ks = NULL
    cdef _de_ptr ke = NULL
    cdef _DeRange one           # the value, when it occurs once
    cdef _DeRange whole         # the entry, to walk it again
    cdef _DeRange* values = NULL
    cdef _DeBody body
    cdef _DeIter it
    cdef uint64_t n, v
    cdef int wt, r
    cdef Py_ssize_t nk = 0, nv = 0, j
    cdef PyObject* t
    cdef _de_ptr at
    while p < e:
        at = p
        if _de_field(&p, e, &n, &wt, &v, &fs, &fe) < 0:
            _de_wire_fault(d, at, e)
            return -1
        if wt == 2:
            if n == _DV_KEY:
                nk += 1
                ks = fs
                ke = fe
            elif n == _DV_VALUE:
                nv += 1
                one.s = fs
                one.e = fe
    if nk == 0:
        key[0] = _DE_EMPTY
        capi.Py_INCREF(_DE_EMPTY)
    else:
        if nk > 1:
            _de_iter(&it, _de_one(&whole, s, e))
            j = 0
            while j < nk - 1 and _de_next(&it, _DV_KEY, &fs, &fe):
                t = _de_text(d, fs, fe)
                if t == NULL:
                    return -1
                capi.Py_DECREF(t)
                j += 1
        key[0] = _de_text(d, ks, ke)
        if key[0] == NULL:
            return -1
    if nv == 0:
        h.kind = 0
        h.more = NULL
        return 0
    if nv == 1:
        body.spans = &one
        body.n = 1
        r = _de_head(d, body, level, h)
    else:
        # several value occurrences merge: a span each
        values = <_DeRange*>malloc(<size_t>nv * sizeof(_DeRange))
        r = -1
        if values != NULL:
            _de_iter(&it, _de_one(&whole, s, e))
            j = 0
            while j < nv and _de_next(&it, _DV_VALUE, &fs, &fe):
                values[j].s = fs
                values[j].e = fe
                j += 1
            if j == nv:
                body.spans = values
                body.n = nv
                r = _de_head(d, body, level, h)
            free(values)
    if r < 0:
        capi.Py_DECREF(key[0])
        key[0] = NULL
    return r


cdef int _de_run(_DeState* d, Py_ssize_t base) noexcept:
    """Fill the open containers down to `base` (proto_reader._Reader.run)."""
    cdef _DeFrame* f
    cdef _DeHead h
    cdef _DeRange one
    cdef PyObject* target
    cdef PyObject* key
    cdef PyObject* child
    cdef _de_ptr s = NULL
    cdef _de_ptr e = NULL
    cdef _de_ptr at
    cdef uint64_t n, v
    cdef int wt, kind, r
    cdef long level
    while d.nframes > base:
        f = &d.frames[d.nframes - 1]
        if f.p >= f.end:
            if f.imore < f.nmore:           # the next occurrence of a merged container
                f.p = f.more[f.imore].s
                f.end = f.more[f.imore].e
                f.imore += 1
                continue
            d.nframes -= 1
            capi.Py_XDECREF(f.target)
            free(f.more)
            continue
        at = f.p
        if _de_field(&f.p, f.end, &n, &wt, &v, &s, &e) < 0:
            _de_wire_fault(d, at, f.end)
            return -1
        kind = f.kind
        if wt != 2 or n != <uint64_t>(_DV_FIELDS if kind == _DV_STRUCT else _DV_VALUES):
            continue            # not an entry/element: unknown, skipped
        level = f.level
        target = f.target       # the frame keeps it alive while it is open
        key = NULL
        if kind == _DV_STRUCT:
            if _de_entry(d, s, e, level, &key, &h) < 0:
                return -1
        elif _de_head(d, _de_one(&one, s, e), level, &h) < 0:
            return -1
        # (f may have moved: _de_head may have pushed frames)
        # h.kind > 1: a container (0 is no kind, 1 a scalar; _de_init checks)
        if h.kind > 1 and level >= d.max_depth:
            _de_fault(d, _DF_DEPTH, at, NULL)     # a container nested deeper than max_depth
            capi.Py_XDECREF(key)
            free(h.more)
            return -1
        if target == NULL:
            capi.Py_XDECREF(key)
            if h.kind == 1:
                capi.Py_DECREF(h.obj)
            elif h.kind > 1 and _de_push(d, NULL, h.kind, &h, level + 1) < 0:
                return -1
            continue
        child = NULL
        if h.kind > 1:
            child = capi.PyDict_New() if h.kind == _DV_STRUCT else capi.PyList_New(0)
            if child == NULL:
                capi.Py_XDECREF(key)
                free(h.more)
                return -1
        if kind == _DV_STRUCT:
            if h.kind == 0:
                # a Value with no kind is undefined in JSON: the key goes
                r = capi.PyDict_Contains(target, key)
                if r > 0:
                    r = capi.PyDict_DelItem(target, key)
            elif h.kind == 1:
                r = capi.PyDict_SetItem(target, key, h.obj)
                capi.Py_DECREF(h.obj)
            else:
                r = capi.PyDict_SetItem(target, key, child)
            capi.Py_DECREF(key)
        elif h.kind == 0:
            r = capi.PyList_Append(target, capi.Py_None)
        elif h.kind == 1:
            r = capi.PyList_Append(target, h.obj)
            capi.Py_DECREF(h.obj)
        else:
            r = capi.PyList_Append(target, child)
        if r < 0:
            capi.Py_XDECREF(child)
            if h.kind > 1:
                free(h.more)
            return -1
        if child != NULL and _de_push(d, child, h.kind, &h, level + 1) < 0:
            return -1
    return 0


cdef PyObject* _de_value(_DeState* d, _DeBody body) noexcept:
    """A google.protobuf.Value as JSON; _DE_ABSENT when it has no kind."""
    cdef Py_ssize_t base = d.nframes
    cdef _DeHead h
    cdef PyObject* r
    if _de_head(d, body, 0, &h) < 0:
        _de_unwind(d, base)
        return NULL
    if h.kind == 0:
        r = _DE_ABSENT
        capi.Py_INCREF(r)
    elif h.kind == 1:
        r = h.obj
    else:
        r = capi.PyDict_New() if h.kind == _DV_STRUCT else capi.PyList_New(0)
        if r == NULL:
            free(h.more)
            _de_unwind(d, base)
            return NULL
        capi.Py_INCREF(r)
        if _de_push(d, r, h.kind, &h, 1) < 0:
            capi.Py_DECREF(r)
            _de_unwind(d, base)
            return NULL
    if _de_run(d, base) < 0:
        capi.Py_DECREF(r)
        _de_unwind(d, base)
        return NULL
    return r


cdef PyObject* _de_struct(_DeState* d, _DeBody body) noexcept:
    """A google.protobuf.Struct as a dict."""
    cdef Py_ssize_t base = d.nframes, i
    cdef PyObject* r = capi.PyDict_New()
    cdef _DeHead h
    if r == NULL:
        return NULL
    h.more = NULL
    h.nmore = 0
    if body.n == 1:
        h.s = body.spans[0].s
        h.e = body.spans[0].e
    else:
        # the frame owns its spans
        h.nmore = body.n
        h.more = <_DeRange*>malloc(<size_t>body.n * sizeof(_DeRange))
        if h.more == NULL:
            capi.Py_DECREF(r)
            return NULL
        for i in range(body.n):
            h.more[i] = body.spans[i]
    capi.Py_INCREF(r)
    if _de_push(d, r, _DV_STRUCT, &h, 1) < 0:
        capi.Py_DECREF(r)
        return NULL
    if _de_run(d, base) < 0:
        capi.Py_DECREF(r)
        _de_unwind(d, base)
        return NULL
    return r


# -- oneofs and chat messages (oneof, source, content_part, parts, chat_message) -------

cdef PyObject* _de_variant(_DeState* d, _DeSpec* union, int* arms, _DeBody body,
                           bint part) noexcept:
    """A oneof shown as a JSON union on "type": a content part or a source."""
    cdef _DeOcc occ[_DE_MAXNUM]
    cdef _DeOcc inner[_DE_MAXNUM]
    cdef uint64_t seen, iseen
    cdef int arm
    cdef _DeSpec* sp
    cdef _DeRange one
    cdef _DeRange* owned = NULL
    cdef _DeBody sub
    cdef PyObject* out = NULL
    if _de_scan(d, body, union, occ, &seen) < 0:
        return NULL
    if agw_popcount64(seen) > 1:
        _de_two_arms(d, 1 if part else 2, seen, body)
        return NULL
    if seen == 0:
        if part and _de_warn(d, _DE_W_UNKNOWN_PART) < 0:
            return NULL
        capi.Py_INCREF(_DE_ABSENT)
        return _DE_ABSENT
    arm = agw_ctz64(seen)
    sp = &_de_specs[arms[arm]]
    if _de_take(&occ[arm], body, arm, &one, &sub, &owned) < 0:
        return NULL
    if _de_scan(d, sub, sp, inner, &iseen) < 0:
        free(owned)
        return NULL
    out = capi.PyDict_New()
    if out == NULL or capi.PyDict_SetItem(out, _DE_K_TYPE, sp.type_name) < 0 \
            or _de_put(d, sp, inner, iseen, sub, out) < 0:
        capi.Py_XDECREF(out)
        free(owned)
        return NULL
    free(owned)
    if part and sp.source and (iseen >> sp.source) & 1 and capi.PyDict_Contains(out, _DE_K_SOURCE) == 0:
        # the source names no kind this version knows: the part is dropped
        capi.Py_DECREF(out)
        if _de_warn(d, sp.warning) < 0:
            return NULL
        capi.Py_INCREF(_DE_ABSENT)
        return _DE_ABSENT
    return out


cdef PyObject* _de_parts(_DeState* d, _DeOcc* o, bint present, _DeBody body,
                         uint64_t number) noexcept:
    """Repeated InputContent as a list; parts of unknown kinds are dropped."""
    cdef PyObject* lst = capi.PyList_New(0)
    cdef PyObject* item
    cdef _DeIter it
    cdef _DeRange one
    cdef _de_ptr s = NULL
    cdef _de_ptr e = NULL
    cdef bint first = True
    if lst == NULL or not present:
        return lst
    _de_iter(&it, body)
    while True:
        if o.count == 1:
            if not first:
                break
            s = o.s
            e = o.e
            first = False
        elif not _de_next(&it, number, &s, &e):
            break
        item = _de_variant(d, &_de_specs[_de_part_union], _de_part_arm, _de_one(&one, s, e), True)
        if item == NULL:
            capi.Py_DECREF(lst)
            return NULL
        if item != _DE_ABSENT and capi.PyList_Append(lst, item) < 0:
            capi.Py_DECREF(item)
            capi.Py_DECREF(lst)
            return NULL
        capi.Py_DECREF(item)
    return lst


cdef int _de_set(PyObject* out, PyObject* key, PyObject* v) noexcept:
    # Set and release `v` (NULL: an error upstream).
    cdef int r
    if v == NULL:
        return -1
    r = capi.PyDict_SetItem(out, key, v)
    capi.Py_DECREF(v)
    return r


cdef int _de_content_fault(_DeState* d, PyObject* role, _DeBody body) noexcept:
    # proto_reader.content_forms words it, from where each content form starts
    if d.fault.code == 0:
        _de_fault(d, _DF_CONTENT, NULL, NULL)
        d.fault.p1 = _de_tag_of(body, _DE_N_TEXT, 2, False)
        d.fault.p2 = _de_tag_of(body, _DE_N_PARTS, 2, False)
        d.fault.p3 = _de_tag_of(body, _DE_N_MAP, 2, False)
        capi.Py_INCREF(role)
        d.fault.role = role
    return -1


cdef int _de_chat(_DeState* d, _DeOcc* occ, uint64_t seen, _DeBody body, PyObject* out) noexcept:
    """Message `content` from the carrier the role says (proto_reader.chat_message)."""
    cdef bint text = (seen >> _DE_N_TEXT) & 1
    cdef bint parts = (seen >> _DE_N_PARTS) & 1
    cdef bint act = (seen >> _DE_N_MAP) & 1
    cdef bint uses_parts, uses_map
    cdef PyObject* role = capi.PyDict_GetItemWithError(out, _DE_K_ROLE)
    cdef PyObject* known
    cdef _DeRange one
    cdef _DeRange* owned = NULL
    cdef _DeBody sub
    cdef long flags
    cdef int r
    if role == NULL:
        return -1
    known = capi.PyDict_GetItemWithError(<PyObject*>_de_roles, role)
    if known != NULL:
        flags = capi.PyLong_AsLong(known)
        uses_parts = flags & 1
        uses_map = (flags & 2) != 0
        if (parts and not uses_parts) or (act and not uses_map) or (uses_map and text) \
                or (uses_parts and text and parts):
            return _de_content_fault(d, role, body)
    else:
        if <int>text + <int>parts + <int>act > 1:
            return _de_content_fault(d, role, body)
        uses_parts = parts
        uses_map = not uses_parts and act
    if text:
        return _de_set(out, _DE_K_CONTENT, _de_last_text(d, &occ[_DE_N_TEXT], body, _DE_N_TEXT))
    if uses_parts:
        return _de_set(
            out, _DE_K_CONTENT, _de_parts(d, &occ[_DE_N_PARTS], parts, body, _DE_N_PARTS)
        )
    if uses_map and act:
        if _de_take(&occ[_DE_N_MAP], body, _DE_N_MAP, &one, &sub, &owned) < 0:
            return -1
        r = _de_set(out, _DE_K_CONTENT, _de_struct(d, sub))
        free(owned)
        return r
    return 0
