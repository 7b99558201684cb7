/*
 * afserialization._speedups: the package's two loops that make one Python object per
 * element, in C. Optional: without it (not built, or AFSERIALIZATION_PURE_PYTHON=1) the
 * package runs the same loops in Python over ctypes, with the same results.
 *
 *   load(source, length, date)       the objects of a pickle the library wrote (the
 *                                    transfer subset of Transfer/Pickle.swift), read in
 *                                    place: source is the library's memory (an address)
 *                                    or bytes
 *   multipart_feed(...)              a piece of a multipart body through
 *                                    afs_multipart_parser_feed_events (called at the
 *                                    address the ctypes layer gives) and its records
 *                                    into Part objects, in one call
 *   Part                             a multipart part's fields: afserialization.Part
 *                                    itself, decoders.py sets its methods on it. Not
 *                                    tracked by the garbage collector (a Python class
 *                                    would be: 10,000 parts would cost a collection per
 *                                    700 and the list holding them traversed each time)
 *
 * It links nothing of libafserialization: it reads memory the library filled (the caller
 * passes its address from ctypes), the types of the header, and calls one function,
 * afs_multipart_parser_feed_events, through the address of the library ctypes loaded. Built
 * against CPython's limited API (abi3, 3.8 and later), so one binary serves every
 * Python version; it links no libpython.
 *
 * Internal: the module and its functions may change without notice.
 */
#define PY_SSIZE_T_CLEAN
#define Py_LIMITED_API 0x03080000
#include <Python.h>
#include <structmember.h>

#include <stdint.h>
#include <string.h>

#include "afserialization.h"

static PyObject *unpickling_error; /* pickle.UnpicklingError */
static PyTypeObject *part_type_c; /* Part */

/* ---- load: the transfer subset of the pickle protocol ------------------------------- */

/* Opcodes (pickletools' names): the subset Transfer/Pickle.swift lists. */
enum {
    OP_MARK = 0x28, OP_STOP = 0x2E, OP_POP = 0x30, OP_POP_MARK = 0x31, OP_BINFLOAT = 0x47,
    OP_BININT = 0x4A, OP_BININT1 = 0x4B, OP_BININT2 = 0x4D, OP_NONE = 0x4E, OP_REDUCE = 0x52,
    OP_BINUNICODE = 0x58, OP_BINBYTES = 0x42, OP_SHORT_BINBYTES = 0x43, OP_EMPTY_LIST = 0x5D,
    OP_APPEND = 0x61, OP_APPENDS = 0x65, OP_BINGET = 0x68, OP_LONG_BINGET = 0x6A,
    OP_BINPUT = 0x71, OP_LONG_BINPUT = 0x72, OP_SETITEM = 0x73, OP_TUPLE = 0x74,
    OP_SETITEMS = 0x75, OP_EMPTY_DICT = 0x7D, OP_EMPTY_TUPLE = 0x29, OP_PROTO = 0x80,
    OP_TUPLE1 = 0x85, OP_TUPLE2 = 0x86, OP_TUPLE3 = 0x87, OP_NEWTRUE = 0x88,
    OP_NEWFALSE = 0x89, OP_LONG1 = 0x8A, OP_LONG4 = 0x8B, OP_SHORT_BINUNICODE = 0x8C,
    OP_BINUNICODE8 = 0x8D, OP_BINBYTES8 = 0x8E, OP_EMPTY_SET = 0x8F, OP_ADDITEMS = 0x90,
    OP_FROZENSET = 0x91, OP_STACK_GLOBAL = 0x93, OP_MEMOIZE = 0x94, OP_FRAME = 0x95,
};

/* The machine: a value stack, the marks on it and the memo. Every push consumes at least
 * one byte of input and every memo index is checked against the input's length, so all
 * three stay within a few times the pickle's size. */
typedef struct {
    const uint8_t *start, *p, *end;
    PyObject **stack;
    Py_ssize_t depth, stack_cap;
    Py_ssize_t *marks;
    Py_ssize_t mark_count, mark_cap;
    PyObject **memo;
    Py_ssize_t memo_cap, memo_count;
    PyObject *date; /* the callable STACK_GLOBAL may name (afserialization._transfer._date) */
} machine;

static int fail(machine *m, const char *what, int opcode) {
    if (!PyErr_Occurred())
        PyErr_Format(unpickling_error,
                     "afserialization: the library's pickle is malformed: %s (opcode 0x%02x at byte %zd)",
                     what, opcode, (Py_ssize_t)(m->p - m->start));
    return -1;
}

static int grow(void **array, Py_ssize_t *cap, Py_ssize_t need, size_t item) {
    if (need <= *cap) return 0;
    Py_ssize_t n = *cap ? *cap : 64;
    while (n < need) n *= 2;
    void *q = PyMem_Realloc(*array, (size_t)n * item);
    if (!q) {
        PyErr_NoMemory();
        return -1;
    }
    *array = q;
    *cap = n;
    return 0;
}

/* Pushes a new reference (NULL: an error is set; returns -1). */
static int push(machine *m, PyObject *o) {
    if (!o) return -1;
    if (m->depth == m->stack_cap && grow((void **)&m->stack, &m->stack_cap, m->depth + 1, sizeof(PyObject *)) < 0) {
        Py_DECREF(o);
        return -1;
    }
    m->stack[m->depth++] = o;
    return 0;
}

/* Where the items above the last mark start (0 without a mark): what an opcode that takes
 * items from the stack may take, as CPython's unpickler allows. */
static Py_ssize_t fence(const machine *m) { return m->mark_count ? m->marks[m->mark_count - 1] : 0; }

/* The start of the items above the last mark, and the mark popped; -1 without a mark. */
static Py_ssize_t pop_mark(machine *m) {
    if (m->mark_count == 0) return -1;
    return m->marks[--m->mark_count];
}

static void drop_to(machine *m, Py_ssize_t depth) {
    while (m->depth > depth) {
        m->depth--;
        Py_DECREF(m->stack[m->depth]);
    }
}

/* n bytes of argument; NULL (and an error) when the input ends first. */
static const uint8_t *take(machine *m, size_t n, int op) {
    if ((size_t)(m->end - m->p) < n) {
        fail(m, "the input ends inside an opcode's argument", op);
        return NULL;
    }
    const uint8_t *q = m->p;
    m->p += n;
    return q;
}

static uint64_t le(const uint8_t *q, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | q[i];
    return v;
}

/* LONG1 / LONG4: little-endian two's complement of n bytes (the library writes at most 8;
 * longer ones through int.from_bytes). */
static PyObject *long_from_bytes(const uint8_t *q, size_t n) {
    if (n == 0) return PyLong_FromLong(0);
    if (n <= 8) {
        uint64_t u = le(q, (int)n);
        if (n < 8 && (q[n - 1] & 0x80)) u |= ~(uint64_t)0 << (8 * n);
        return PyLong_FromLongLong((long long)u);
    }
    PyObject *b = PyBytes_FromStringAndSize((const char *)q, (Py_ssize_t)n);
    PyObject *from_bytes = b ? PyObject_GetAttrString((PyObject *)&PyLong_Type, "from_bytes") : NULL;
    PyObject *args = from_bytes ? Py_BuildValue("(Os)", b, "little") : NULL;
    PyObject *kw = args ? Py_BuildValue("{s:O}", "signed", Py_True) : NULL;
    PyObject *r = kw ? PyObject_Call(from_bytes, args, kw) : NULL;
    Py_XDECREF(kw);
    Py_XDECREF(args);
    Py_XDECREF(from_bytes);
    Py_XDECREF(b);
    return r;
}

static PyObject *tuple_from(machine *m, Py_ssize_t from) {
    PyObject *t = PyTuple_New(m->depth - from);
    if (!t) return NULL;
    for (Py_ssize_t i = from; i < m->depth; i++) PyTuple_SetItem(t, i - from, m->stack[i]); /* steals */
    m->depth = from;
    return t;
}

static int memo_put(machine *m, Py_ssize_t index, int op) {
    if (m->depth <= fence(m)) return fail(m, "nothing above the mark to memoize", op);
    if (index < 0 || index > (Py_ssize_t)(m->end - m->start)) return fail(m, "memo index out of range", op);
    if (index >= m->memo_cap) {
        Py_ssize_t old = m->memo_cap;
        if (grow((void **)&m->memo, &m->memo_cap, index + 1, sizeof(PyObject *)) < 0) return -1;
        memset(m->memo + old, 0, (size_t)(m->memo_cap - old) * sizeof(PyObject *));
    }
    PyObject *o = m->stack[m->depth - 1];
    Py_INCREF(o);
    if (m->memo[index]) Py_DECREF(m->memo[index]);
    else m->memo_count++;
    m->memo[index] = o;
    return 0;
}

static int memo_get(machine *m, uint64_t index, int op) {
    if (index >= (uint64_t)m->memo_cap || !m->memo[index]) return fail(m, "memo key not found", op);
    PyObject *o = m->memo[index];
    Py_INCREF(o);
    return push(m, o);
}

static PyObject *run(machine *m) {
    while (m->p < m->end) {
        int op = *m->p++;
        const uint8_t *q;
        switch (op) {
        case OP_PROTO:
            if (!(q = take(m, 1, op))) return NULL;
            if (*q > 5) { fail(m, "unsupported protocol", op); return NULL; }
            break;
        case OP_FRAME: /* the whole pickle is in memory: frames need no reading */
            if (!take(m, 8, op)) return NULL;
            break;
        case OP_STOP: {
            if (m->depth == 0 || (m->mark_count && m->depth <= fence(m))) {
                fail(m, "STOP with an empty stack", op);
                return NULL;
            }
            PyObject *top = m->stack[--m->depth];
            return top;
        }
        case OP_MARK:
            if (m->mark_count == m->mark_cap && grow((void **)&m->marks, &m->mark_cap, m->mark_count + 1, sizeof(Py_ssize_t)) < 0)
                return NULL;
            m->marks[m->mark_count++] = m->depth;
            break;
        case OP_POP:
            if (m->mark_count && m->marks[m->mark_count - 1] == m->depth) m->mark_count--;
            else if (m->depth > 0) drop_to(m, m->depth - 1);
            else { fail(m, "POP with an empty stack", op); return NULL; }
            break;
        case OP_POP_MARK: {
            Py_ssize_t from = pop_mark(m);
            if (from < 0) { fail(m, "no MARK", op); return NULL; }
            drop_to(m, from);
            break;
        }
        case OP_NONE: Py_INCREF(Py_None); if (push(m, Py_None) < 0) return NULL; break;
        case OP_NEWTRUE: Py_INCREF(Py_True); if (push(m, Py_True) < 0) return NULL; break;
        case OP_NEWFALSE: Py_INCREF(Py_False); if (push(m, Py_False) < 0) return NULL; break;
        case OP_BININT1:
            if (!(q = take(m, 1, op)) || push(m, PyLong_FromLong(q[0])) < 0) return NULL;
            break;
        case OP_BININT2:
            if (!(q = take(m, 2, op)) || push(m, PyLong_FromLong((long)le(q, 2))) < 0) return NULL;
            break;
        case OP_BININT:
            if (!(q = take(m, 4, op)) || push(m, PyLong_FromLong((long)(int32_t)(uint32_t)le(q, 4))) < 0) return NULL;
            break;
        case OP_LONG1:
        case OP_LONG4: {
            int w = op == OP_LONG1 ? 1 : 4;
            if (!(q = take(m, (size_t)w, op))) return NULL;
            int64_t n = op == OP_LONG1 ? (int64_t)q[0] : (int64_t)(int32_t)(uint32_t)le(q, 4);
            if (n < 0) { fail(m, "negative length", op); return NULL; }
            if (!(q = take(m, (size_t)n, op)) || push(m, long_from_bytes(q, (size_t)n)) < 0) return NULL;
            break;
        }
        case OP_BINFLOAT: {
            if (!(q = take(m, 8, op))) return NULL;
            uint64_t u = 0;
            for (int i = 0; i < 8; i++) u = (u << 8) | q[i]; /* big-endian */
            double d;
            memcpy(&d, &u, 8);
            if (push(m, PyFloat_FromDouble(d)) < 0) return NULL;
            break;
        }
        case OP_SHORT_BINUNICODE:
        case OP_BINUNICODE:
        case OP_BINUNICODE8:
        case OP_SHORT_BINBYTES:
        case OP_BINBYTES:
        case OP_BINBYTES8: {
            int w = (op == OP_SHORT_BINUNICODE || op == OP_SHORT_BINBYTES) ? 1
                  : (op == OP_BINUNICODE || op == OP_BINBYTES) ? 4 : 8;
            if (!(q = take(m, (size_t)w, op))) return NULL;
            uint64_t n = le(q, w);
            if (n > (uint64_t)(m->end - m->p)) { fail(m, "the input ends inside a string", op); return NULL; }
            const char *s = (const char *)m->p;
            m->p += n;
            PyObject *o = (op == OP_SHORT_BINBYTES || op == OP_BINBYTES || op == OP_BINBYTES8)
                ? PyBytes_FromStringAndSize(s, (Py_ssize_t)n)
                : PyUnicode_DecodeUTF8(s, (Py_ssize_t)n, "surrogatepass");
            if (push(m, o) < 0) return NULL;
            break;
        }
        case OP_EMPTY_DICT: if (push(m, PyDict_New()) < 0) return NULL; break;
        case OP_EMPTY_LIST: if (push(m, PyList_New(0)) < 0) return NULL; break;
        case OP_EMPTY_TUPLE: if (push(m, PyTuple_New(0)) < 0) return NULL; break;
        case OP_EMPTY_SET: if (push(m, PySet_New(NULL)) < 0) return NULL; break;
        case OP_TUPLE1:
        case OP_TUPLE2:
        case OP_TUPLE3: {
            Py_ssize_t n = op - OP_TUPLE1 + 1;
            if (m->depth - fence(m) < n) { fail(m, "too few items on the stack", op); return NULL; }
            if (push(m, tuple_from(m, m->depth - n)) < 0) return NULL;
            break;
        }
        case OP_TUPLE:
        case OP_FROZENSET: {
            Py_ssize_t from = pop_mark(m);
            if (from < 0) { fail(m, "no MARK", op); return NULL; }
            PyObject *t = tuple_from(m, from);
            if (t && op == OP_FROZENSET) {
                PyObject *f = PyFrozenSet_New(t);
                Py_DECREF(t);
                t = f;
            }
            if (push(m, t) < 0) return NULL;
            break;
        }
        case OP_SETITEM:
        case OP_SETITEMS:
        case OP_APPEND:
        case OP_APPENDS:
        case OP_ADDITEMS: {
            Py_ssize_t from;
            if (op == OP_SETITEM) from = m->depth - 2;
            else if (op == OP_APPEND) from = m->depth - 1;
            else if ((from = pop_mark(m)) < 0) { fail(m, "no MARK", op); return NULL; }
            if (from < 1 || from - 1 < fence(m)) { fail(m, "no container below the items", op); return NULL; }
            PyObject *c = m->stack[from - 1];
            int rc = 0;
            if (op == OP_SETITEM || op == OP_SETITEMS) {
                if (!PyDict_CheckExact(c)) { fail(m, "SETITEMS on something that is not a dict", op); return NULL; }
                if ((m->depth - from) % 2) { fail(m, "odd number of items for SETITEMS", op); return NULL; }
                for (Py_ssize_t i = from; rc == 0 && i < m->depth; i += 2) rc = PyDict_SetItem(c, m->stack[i], m->stack[i + 1]);
            } else if (op == OP_ADDITEMS) {
                if (!PySet_Check(c) || PyFrozenSet_Check(c)) { fail(m, "ADDITEMS on something that is not a set", op); return NULL; }
                for (Py_ssize_t i = from; rc == 0 && i < m->depth; i++) rc = PySet_Add(c, m->stack[i]);
            } else {
                if (!PyList_CheckExact(c)) { fail(m, "APPENDS on something that is not a list", op); return NULL; }
                for (Py_ssize_t i = from; rc == 0 && i < m->depth; i++) rc = PyList_Append(c, m->stack[i]);
            }
            drop_to(m, from);
            if (rc < 0) return NULL;
            break;
        }
        case OP_MEMOIZE:
            if (memo_put(m, m->memo_count, op) < 0) return NULL;
            break;
        case OP_BINPUT:
            if (!(q = take(m, 1, op)) || memo_put(m, q[0], op) < 0) return NULL;
            break;
        case OP_LONG_BINPUT:
            if (!(q = take(m, 4, op)) || memo_put(m, (Py_ssize_t)le(q, 4), op) < 0) return NULL;
            break;
        case OP_BINGET:
            if (!(q = take(m, 1, op)) || memo_get(m, q[0], op) < 0) return NULL;
            break;
        case OP_LONG_BINGET:
            if (!(q = take(m, 4, op)) || memo_get(m, le(q, 4), op) < 0) return NULL;
            break;
        case OP_STACK_GLOBAL: {
            /* Only the library's dates: afserialization._transfer._date */
            if (m->depth - fence(m) < 2) { fail(m, "too few items on the stack", op); return NULL; }
            PyObject *module = m->stack[m->depth - 2], *name = m->stack[m->depth - 1];
            int ok = PyUnicode_Check(module) && PyUnicode_Check(name)
                && PyUnicode_CompareWithASCIIString(module, "afserialization._transfer") == 0
                && PyUnicode_CompareWithASCIIString(name, "_date") == 0;
            if (!ok) {
                if (PyUnicode_Check(module) && PyUnicode_Check(name))
                    PyErr_Format(unpickling_error,
                                 "afserialization: the library's output named %U.%U; only plain data "
                                 "is ever accepted (this is a bug in the library)", module, name);
                else
                    fail(m, "STACK_GLOBAL without two strings", op);
                return NULL;
            }
            drop_to(m, m->depth - 2);
            Py_INCREF(m->date);
            if (push(m, m->date) < 0) return NULL;
            break;
        }
        case OP_REDUCE: {
            if (m->depth - fence(m) < 2 || m->stack[m->depth - 2] != m->date
                || !PyTuple_Check(m->stack[m->depth - 1])) {
                fail(m, "REDUCE on something other than the library's date", op);
                return NULL;
            }
            PyObject *r = PyObject_CallObject(m->date, m->stack[m->depth - 1]);
            drop_to(m, m->depth - 2);
            if (push(m, r) < 0) return NULL;
            break;
        }
        default:
            fail(m, "an opcode outside the library's subset", op);
            return NULL;
        }
    }
    fail(m, "the input ends without STOP", m->p > m->start ? m->p[-1] : 0);
    return NULL;
}

static PyObject *py_load(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *source;
    Py_ssize_t length;
    PyObject *date;
    if (!PyArg_ParseTuple(args, "OnO:load", &source, &length, &date)) return NULL;
    const uint8_t *p;
    if (PyBytes_Check(source)) {
        p = (const uint8_t *)PyBytes_AsString(source);
        if (!p) return NULL;
        if (length < 0 || length > PyBytes_Size(source)) {
            PyErr_SetString(PyExc_ValueError, "load: the length is outside the bytes");
            return NULL;
        }
    } else {
        p = PyLong_AsVoidPtr(source);
        if (!p && PyErr_Occurred()) return NULL;
        if (length < 0 || (!p && length)) {
            PyErr_SetString(PyExc_ValueError, "load: a NULL address or a negative length");
            return NULL;
        }
    }
    machine m;
    memset(&m, 0, sizeof m);
    m.start = m.p = p;
    m.end = p + length;
    m.date = date;
    PyObject *r = run(&m);
    drop_to(&m, 0);
    for (Py_ssize_t i = 0; i < m.memo_cap; i++) Py_XDECREF(m.memo[i]);
    PyMem_Free(m.stack);
    PyMem_Free(m.marks);
    PyMem_Free(m.memo);
    return r;
}

/* ---- multipart: records into parts --------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    Py_ssize_t index;
    unsigned long long size;
    unsigned int flags;
    PyObject *head, *decoded, *data, *file;
} PartObject;

static PyMemberDef part_members[] = {
    {"index", T_PYSSIZET, offsetof(PartObject, index), 0, "the part's index in the body (0 first)"},
    {"size", T_ULONGLONG, offsetof(PartObject, size), 0, "the body's size in bytes"},
    {"_flags", T_UINT, offsetof(PartObject, flags), 0, NULL},
    {"_head", T_OBJECT_EX, offsetof(PartObject, head), 0, NULL},
    {"_decoded", T_OBJECT_EX, offsetof(PartObject, decoded), 0, NULL},
    {"_data", T_OBJECT_EX, offsetof(PartObject, data), 0, NULL},
    {"_file", T_OBJECT_EX, offsetof(PartObject, file), 0, NULL},
    {NULL, 0, 0, 0, NULL},
};

static void part_dealloc(PyObject *self) {
    PartObject *p = (PartObject *)self;
    PyTypeObject *tp = Py_TYPE(self);
    Py_CLEAR(p->head);
    Py_CLEAR(p->decoded);
    Py_CLEAR(p->data);
    Py_CLEAR(p->file);
    freefunc release = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    release(self);
    Py_DECREF(tp); /* instances of heap types hold their type */
}

static PyType_Slot part_slots[] = {
    {Py_tp_dealloc, (void *)part_dealloc},
    {Py_tp_members, part_members},
    {Py_tp_new, (void *)PyType_GenericNew},
    {Py_tp_doc, (void *)"One part of a multipart body (its methods are set by afserialization.decoders)."},
    {0, NULL},
};

static PyType_Spec part_spec = {
    "afserialization.Part", sizeof(PartObject), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, part_slots,
};

/*
 * The records ev[0:count] of one afs_multipart_parser_feed_events call, whose data offsets
 * are relative to data[base:] (bytes) or to the arena. A whole part in one record with at
 * most `spool` bytes becomes a Part here (data as bytes, or given to sink(part, bytes)
 * when sink is not None) appended to `done`; every other record goes to
 * record(flags, index, head, piece) (head: bytes with BEGIN, else None; piece: bytes, a
 * memoryview of data for 64 KiB or more, or None), the Python method that keeps the part
 * in progress. Returns -1 with a Python exception set.
 */
static int records(const afs_multipart_event *ev, Py_ssize_t count, PyObject *data, Py_ssize_t base,
                   const uint8_t *arena, Py_ssize_t arena_length, PyTypeObject *type,
                   unsigned long long spool, PyObject *sink, PyObject *done, PyObject *record) {
    const char *bytes = PyBytes_AsString(data);
    Py_ssize_t size = PyBytes_Size(data);
    if (!bytes) return -1;
    if (base > size) {
        PyErr_SetString(PyExc_ValueError, "multipart records: base is past the data");
        return -1;
    }
    allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
    PyObject *view = NULL; /* a memoryview of data, made for the first large piece */
    int rc = 0;
    for (Py_ssize_t i = 0; rc == 0 && i < count; i++) {
        const afs_multipart_event *e = &ev[i];
        uint32_t flags = e->flags;
        uint64_t ho = e->head_offset, hl = e->head_length, dof = e->data_offset, dl = e->data_length;
        int in_arena = (flags & AFS_MULTIPART_DATA_IN_ARENA) != 0;
        if (((flags & AFS_MULTIPART_BEGIN) && (ho > (uint64_t)arena_length || hl > (uint64_t)arena_length - ho))
            || (dl && (in_arena ? (dof > (uint64_t)arena_length || dl > (uint64_t)arena_length - dof)
                                : (dof > (uint64_t)(size - base) || dl > (uint64_t)(size - base) - dof)))) {
            PyErr_Format(PyExc_ValueError, "multipart records: record %zd points outside its buffers", i);
            rc = -1;
            break;
        }
        const char *piece_at = in_arena ? (const char *)arena + dof : bytes + base + dof;
        if ((flags & 7) == (AFS_MULTIPART_BEGIN | AFS_MULTIPART_END) && dl <= spool) {
            /* the common small field: one record, one part */
            PartObject *p = (PartObject *)alloc(type, 0);
            if (!p) { rc = -1; break; }
            p->index = (Py_ssize_t)e->index;
            p->flags = flags;
            p->size = dl;
            p->head = PyBytes_FromStringAndSize((const char *)arena + ho, (Py_ssize_t)hl);
            rc = p->head ? 0 : -1;
            if (rc == 0 && sink == Py_None) {
                rc = (p->data = PyBytes_FromStringAndSize(piece_at, (Py_ssize_t)dl)) ? 0 : -1;
            } else if (rc == 0) {
                Py_INCREF(Py_None);
                p->data = Py_None;
                if (dl) {
                    PyObject *piece = PyBytes_FromStringAndSize(piece_at, (Py_ssize_t)dl);
                    PyObject *r = piece ? PyObject_CallFunctionObjArgs(sink, (PyObject *)p, piece, NULL) : NULL;
                    Py_XDECREF(piece);
                    rc = r ? 0 : -1;
                    Py_XDECREF(r);
                }
            }
            if (rc == 0) rc = PyList_Append(done, (PyObject *)p);
            Py_DECREF(p);
            continue;
        }
        PyObject *head = (flags & AFS_MULTIPART_BEGIN)
            ? PyBytes_FromStringAndSize((const char *)arena + ho, (Py_ssize_t)hl) : (Py_INCREF(Py_None), Py_None);
        PyObject *piece;
        if (!dl) {
            Py_INCREF(Py_None);
            piece = Py_None;
        } else if (in_arena || dl < 65536) {
            piece = PyBytes_FromStringAndSize(piece_at, (Py_ssize_t)dl);
        } else {
            if (!view && !(view = PyMemoryView_FromObject(data))) piece = NULL;
            else piece = PySequence_GetSlice(view, base + (Py_ssize_t)dof, base + (Py_ssize_t)(dof + dl));
        }
        PyObject *r = NULL;
        if (head && piece)
            r = PyObject_CallFunction(record, "IKOO", (unsigned int)flags, (unsigned long long)e->index, head, piece);
        Py_XDECREF(head);
        Py_XDECREF(piece);
        rc = r ? 0 : -1;
        Py_XDECREF(r);
    }
    if (view) {
        /* released, so that data's buffer is not held past this call (a slice handed to
         * record or sink that is still alive keeps it: then release fails, harmlessly) */
        PyObject *type_, *value, *tb;
        PyErr_Fetch(&type_, &value, &tb);
        PyObject *r = PyObject_CallMethod(view, "release", NULL);
        Py_XDECREF(r);
        PyErr_Clear();
        Py_DECREF(view);
        PyErr_Restore(type_, value, tb);
    }
    return rc;
}

static int check_part_type(PyObject *t) {
    if (!PyType_Check(t) || !PyType_IsSubtype((PyTypeObject *)t, part_type_c)) {
        PyErr_SetString(PyExc_TypeError, "multipart: part_type must be afserialization.Part or a subclass");
        return -1;
    }
    return 0;
}

typedef afs_status (*feed_events_fn)(afs_multipart_parser *, const uint8_t *, size_t, afs_multipart_event *, size_t,
                                     afs_multipart_feed_result *, afs_error *);

/*
 * multipart_feed(function, parser, data, events, max_events, result, error, part_type,
 *                spool, sink, done, record) -> status
 *
 * Feeds all of data (bytes; b"" for what the parser held back) to the parser with
 * afs_multipart_parser_feed_events (`function`: its address, from the library the ctypes
 * layer loaded), making parts of the records after each call as records() does. Returns
 * the library's status (0, or the error it filled into `error`); raises what record or
 * sink raised. The GIL is released while the library parses, as ctypes does.
 */
static PyObject *py_multipart_feed(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *fn_at, *parser_at, *data, *events_at, *result_at, *error_at, *type, *sink, *done, *record;
    Py_ssize_t max_events;
    unsigned long long spool;
    if (!PyArg_ParseTuple(args, "OOO!OnOOOKOO!O:multipart_feed", &fn_at, &parser_at, &PyBytes_Type, &data, &events_at,
                          &max_events, &result_at, &error_at, &type, &spool, &sink, &PyList_Type, &done, &record))
        return NULL;
    feed_events_fn fn = (feed_events_fn)PyLong_AsVoidPtr(fn_at);
    afs_multipart_parser *parser = PyLong_AsVoidPtr(parser_at);
    afs_multipart_event *events = PyLong_AsVoidPtr(events_at);
    afs_multipart_feed_result *result = PyLong_AsVoidPtr(result_at);
    afs_error *error = PyLong_AsVoidPtr(error_at);
    if (PyErr_Occurred()) return NULL;
    if (!fn || !parser || !events || !result || !error || max_events < 1) {
        PyErr_SetString(PyExc_ValueError, "multipart_feed: a NULL address or no room for records");
        return NULL;
    }
    if (check_part_type(type) < 0) return NULL;
    const uint8_t *bytes = (const uint8_t *)PyBytes_AsString(data);
    Py_ssize_t n = PyBytes_Size(data);
    if (!bytes) return NULL;
    Py_ssize_t off = 0;
    for (;;) {
        afs_status status;
        Py_BEGIN_ALLOW_THREADS
        status = fn(parser, n ? bytes + off : NULL, (size_t)(n - off), events, (size_t)max_events, result, error);
        Py_END_ALLOW_THREADS
        if (status != AFS_OK) return PyLong_FromLong((long)status);
        if (result->consumed > (size_t)(n - off) || result->event_count > (size_t)max_events) {
            PyErr_SetString(PyExc_ValueError, "multipart_feed: the library reported more than it was given");
            return NULL;
        }
        if (result->event_count
            && records(events, (Py_ssize_t)result->event_count, data, off, result->arena,
                       (Py_ssize_t)result->arena_length, (PyTypeObject *)type, spool, sink, done, record) < 0)
            return NULL;
        off += (Py_ssize_t)result->consumed;
        if (!result->more) break;
    }
    return PyLong_FromLong(0);
}

/* ---- the module ---------------------------------------------------------------------- */

static PyMethodDef methods[] = {
    {"load", py_load, METH_VARARGS,
     "load(source, length, date) -> object: the pickle the library wrote at source (an "
     "address or bytes; its transfer subset; dates through date(seconds))."},
    {"multipart_feed", py_multipart_feed, METH_VARARGS,
     "multipart_feed(function, parser, data, events, max_events, result, error, part_type, "
     "spool, sink, done, record) -> status: data through afs_multipart_parser_feed_events "
     "(at the address `function`), the records into parts."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "afserialization._speedups",
    "C loops of the afserialization package (optional; see _speedups.c).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__speedups(void) {
    PyObject *mod = PyModule_Create(&module_def);
    if (!mod) return NULL;
    PyObject *pickle = PyImport_ImportModule("pickle");
    if (!pickle) goto failed;
    unpickling_error = PyObject_GetAttrString(pickle, "UnpicklingError");
    Py_DECREF(pickle);
    if (!unpickling_error) goto failed;
    part_type_c = (PyTypeObject *)PyType_FromSpec(&part_spec);
    if (!part_type_c) goto failed;
    Py_INCREF(part_type_c);
    if (PyModule_AddObject(mod, "Part", (PyObject *)part_type_c) < 0) {
        Py_DECREF(part_type_c);
        goto failed;
    }
    if (PyModule_AddIntConstant(mod, "EVENT_SIZE", (long)sizeof(afs_multipart_event)) < 0) goto failed;
    return mod;
failed:
    Py_DECREF(mod);
    return NULL;
}
