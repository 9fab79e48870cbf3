/* The decoders' instance constructor, compiled where a C compiler is (codegen/build_hook.py).

constructor(cls, names) returns a callable that makes an instance of the slotted class `cls`
without calling __init__ and stores its positional arguments in the slots `names`, in order: what
the generated decoders otherwise do in Python with object.__new__ and one member descriptor
__set__ per slot (_runtime.constructor falls back to those when this module is missing). The
decoders have checked every value already; the stores are what is left, and in Python they cost
a third of decoding a small event.

It refuses (TypeError) a class it cannot build safely: one whose instances have a __dict__ or
items, whose __new__ is not object's, or a name that is not a writable object slot of it. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

typedef struct {
    PyObject_VAR_HEAD
    vectorcallfunc vectorcall;
    PyTypeObject *cls;
    Py_ssize_t offsets[1];
} Constructor;

static PyObject *
constructor_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Constructor *c = (Constructor *)self;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0) {
        PyErr_SetString(PyExc_TypeError, "a constructor takes no keyword arguments");
        return NULL;
    }
    if (n != Py_SIZE(c)) {
        PyErr_Format(PyExc_TypeError, "%s's constructor takes %zd arguments, not %zd",
                     c->cls->tp_name, Py_SIZE(c), n);
        return NULL;
    }
    PyObject *o = c->cls->tp_alloc(c->cls, 0);
    if (o == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject **slot = (PyObject **)((char *)o + c->offsets[i]);
        PyObject *old = *slot;
        *slot = Py_NewRef(args[i]);
        Py_XDECREF(old); /* NULL after tp_alloc; a repeated name replaces its earlier value */
    }
    return o;
}

static int
constructor_traverse(PyObject *self, visitproc visit, void *arg)
{
    Py_VISIT(((Constructor *)self)->cls);
    return 0;
}

static int
constructor_clear(PyObject *self)
{
    Py_CLEAR(((Constructor *)self)->cls);
    return 0;
}

static void
constructor_dealloc(PyObject *self)
{
    PyObject_GC_UnTrack(self);
    constructor_clear(self);
    Py_TYPE(self)->tp_free(self);
}

static PyObject *
constructor_repr(PyObject *self)
{
    return PyUnicode_FromFormat("<constructor of %s>", ((Constructor *)self)->cls->tp_name);
}

static PyTypeObject ConstructorType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "agui_generated._construct.Constructor",
    .tp_basicsize = offsetof(Constructor, offsets),
    .tp_itemsize = sizeof(Py_ssize_t),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Constructor, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_traverse = constructor_traverse,
    .tp_clear = constructor_clear,
    .tp_dealloc = constructor_dealloc,
    .tp_repr = constructor_repr,
    .tp_doc = "Makes an instance of one slotted class from its slots' values, in order.",
};

static PyObject *
constructor(PyObject *module, PyObject *args)
{
    PyTypeObject *cls;
    PyObject *names;
    if (!PyArg_ParseTuple(args, "O!O!:constructor", &PyType_Type, &cls, &PyTuple_Type, &names)) {
        return NULL;
    }
    if (cls->tp_dictoffset != 0 || cls->tp_itemsize != 0 || cls->tp_new != PyBaseObject_Type.tp_new
        || cls->tp_alloc == NULL || (cls->tp_flags & Py_TPFLAGS_IS_ABSTRACT)) {
        PyErr_Format(PyExc_TypeError, "%s is not a plain slotted class", cls->tp_name);
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    Constructor *c = PyObject_GC_NewVar(Constructor, &ConstructorType, n);
    if (c == NULL) {
        return NULL;
    }
    c->vectorcall = constructor_call;
    c->cls = (PyTypeObject *)Py_NewRef(cls);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *name = PyTuple_GET_ITEM(names, i);
        PyObject *descr = PyUnicode_Check(name) ? _PyType_Lookup(cls, name) : NULL;
        if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type)
            || !PyType_IsSubtype(cls, PyDescr_TYPE(descr))) {
            PyErr_Format(PyExc_TypeError, "%R is not a slot of %s", name, cls->tp_name);
            Py_DECREF(c);
            return NULL;
        }
        PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
        if (member->type != T_OBJECT_EX || (member->flags & READONLY)) {
            PyErr_Format(PyExc_TypeError, "%R is not a writable object slot of %s", name,
                         cls->tp_name);
            Py_DECREF(c);
            return NULL;
        }
        c->offsets[i] = member->offset;
    }
    PyObject_GC_Track(c);
    return (PyObject *)c;
}

static PyMethodDef methods[] = {
    {"constructor", constructor, METH_VARARGS,
     "constructor(cls, names): a callable making an instance of cls from the values of the slots "
     "names, in order, without calling __init__."},
    {NULL, NULL, 0, NULL},
};

static int
exec_module(PyObject *module)
{
    if (PyType_Ready(&ConstructorType) < 0) {
        return -1;
    }
    return PyModule_AddObjectRef(module, "Constructor", (PyObject *)&ConstructorType);
}

static PyModuleDef_Slot slots[] = {
    {Py_mod_exec, exec_module},
    {0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "agui_generated._construct",
    .m_doc = "The generated decoders' compiled instance constructor (see _runtime.constructor).",
    .m_size = 0,
    .m_methods = methods,
    .m_slots = slots,
};

PyMODINIT_FUNC
PyInit__construct(void)
{
    return PyModuleDef_Init(&module);
}
