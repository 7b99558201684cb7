/*
 * The decoder benchmark's floor for Python query parsing: what CPython itself costs to make
 * a query's result, with no parser. floor(text: bytes) splits the text at '&' and its first
 * '=' (no percent-decoding, no '+', no limits: the benchmark's query needs none) and makes
 * the dict of str to str parse_query returns for it, inserting each pair as it is made,
 * through the same limited API the package's compiled module uses. No parser that returns
 * those objects can take less; Benchmarks/decoders/run.sh builds it and prints it beside
 * parse_query and parse_qs.
 */
#define PY_SSIZE_T_CLEAN
#define Py_LIMITED_API 0x03080000
#include <Python.h>
#include <string.h>

static PyObject *floor_(PyObject *self, PyObject *arg) {
    (void)self;
    char *text;
    Py_ssize_t n;
    if (PyBytes_AsStringAndSize(arg, &text, &n) < 0) return NULL;
    const char *p = text, *end = text + n;  /* (the text encoded, as parse_query encodes it) */
    PyObject *d = PyDict_New();
    while (d && p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        if (!amp) amp = end;
        const char *eq = memchr(p, '=', (size_t)(amp - p));
        PyObject *k = PyUnicode_DecodeUTF8(p, (eq ? eq : amp) - p, "surrogatepass");
        PyObject *v = eq ? PyUnicode_DecodeUTF8(eq + 1, amp - eq - 1, "surrogatepass") : (Py_INCREF(Py_None), Py_None);
        if (!k || !v || PyDict_SetItem(d, k, v) < 0) Py_CLEAR(d);
        Py_XDECREF(k);
        Py_XDECREF(v);
        p = amp + 1;
    }
    return d;
}

static PyMethodDef methods[] = {{"floor", floor_, METH_O, "floor(text) -> dict"}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "query_floor", NULL, -1, methods, NULL, NULL, NULL, NULL};
PyMODINIT_FUNC PyInit_query_floor(void) { return PyModule_Create(&module_def); }
