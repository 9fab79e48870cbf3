/* The models' compiled stores, built where a C compiler is (codegen/build_hook.py); without it
the generated code does the same in Python. Two functions:

initializer(...), below: the __init__ of a model (models.py installs it).

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

/* The offset of a writable object slot `name` of `cls`, or -1 with TypeError set. */
static Py_ssize_t
slot_offset(PyTypeObject *cls, PyObject *name)
{
    PyObject *descr = PyUnicode_Check(name) ? _PyType_Lookup(cls, name) : NULL;
    if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type)
        || !PyType_IsSubtype(cls, PyDescr_TYPE(descr))) {
        PyErr_Format(PyExc_TypeError, "%R is not a slot of %s", name, cls->tp_name);
        return -1;
    }
    PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
    if (member->type != T_OBJECT_EX || (member->flags & READONLY)) {
        PyErr_Format(PyExc_TypeError, "%R is not a writable object slot of %s", name,
                     cls->tp_name);
        return -1;
    }
    return member->offset;
}

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
        Py_ssize_t offset = slot_offset(cls, name);
        if (offset < 0) {
            Py_DECREF(c);
            return NULL;
        }
        c->offsets[i] = offset;
    }
    PyObject_GC_Track(c);
    return (PyObject *)c;
}

/* initializer(cls, names, defaults, required, original): an __init__ for a frozen, slotted,
keyword-only class whose members have no converter or validator (models.py decides): what attrs
writes in Python, one object.__setattr__ per member, done as stores into the slots. `defaults`
holds each member's default, or `required` for one without; `original` (attrs' __init__) gives the
signature. Called as cls.__init__ is: the instance, then keyword arguments only. */

#define MAX_MEMBERS 64

typedef struct {
    PyObject_VAR_HEAD
    vectorcallfunc vectorcall;
    PyTypeObject *cls;
    PyObject *names;    /* tuple of interned str */
    PyObject *defaults; /* tuple, `required` where there is none */
    PyObject *required;
    PyObject *original;
    Py_ssize_t offsets[1];
} Init;

static Py_ssize_t
init_index(Init *c, PyObject *name)
{
    Py_ssize_t n = Py_SIZE(c);
    for (Py_ssize_t i = 0; i < n; i++) { /* call sites pass interned names: pointers match */
        if (PyTuple_GET_ITEM(c->names, i) == name) {
            return i;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int same = PyUnicode_Compare(PyTuple_GET_ITEM(c->names, i), name);
        if (same == 0) {
            return i;
        }
        if (same == -1 && PyErr_Occurred()) {
            return -2;
        }
    }
    return -1;
}

static PyObject *
init_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Init *c = (Init *)self;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    Py_ssize_t n = Py_SIZE(c);
    const char *name = c->cls->tp_name;
    if (nargs != 1) {
        if (nargs == 0) {
            PyErr_Format(PyExc_TypeError, "%s.__init__() needs the instance", name);
        }
        else {
            PyErr_Format(PyExc_TypeError,
                         "%s.__init__() takes 1 positional argument but %zd were given", name,
                         nargs);
        }
        return NULL;
    }
    PyObject *o = args[0];
    if (!PyObject_TypeCheck(o, c->cls)) {
        PyErr_Format(PyExc_TypeError, "%s.__init__() needs a %s, not %s", name, name,
                     Py_TYPE(o)->tp_name);
        return NULL;
    }
    if (Py_TYPE(o) != c->cls) {
        /* a subclass that inherits this __init__ may re-declare a slot (__slots__ = ('delta',)),
        whose descriptor then reads another offset than the one stored here: attrs' __init__
        stores through the subclass's own descriptors */
        return PyObject_Vectorcall(c->original, args, nargsf, kwnames);
    }
    PyObject *values[MAX_MEMBERS] = {NULL};
    Py_ssize_t given = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t k = 0; k < given; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k);
        Py_ssize_t i = init_index(c, key);
        if (i == -2) {
            return NULL;
        }
        if (i == -1) {
            PyErr_Format(PyExc_TypeError, "%s.__init__() got an unexpected keyword argument %R",
                         name, key);
            return NULL;
        }
        if (values[i] != NULL) {
            PyErr_Format(PyExc_TypeError, "%s.__init__() got multiple values for argument %R",
                         name, key);
            return NULL;
        }
        values[i] = args[1 + k];
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (values[i] == NULL) {
            values[i] = PyTuple_GET_ITEM(c->defaults, i);
            if (values[i] == c->required) {
                PyErr_Format(PyExc_TypeError,
                             "%s.__init__() missing a required keyword-only argument: %R", name,
                             PyTuple_GET_ITEM(c->names, i));
                return NULL;
            }
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject **slot = (PyObject **)((char *)o + c->offsets[i]);
        PyObject *old = *slot;
        *slot = Py_NewRef(values[i]);
        Py_XDECREF(old);
    }
    Py_RETURN_NONE;
}

static int
init_traverse(PyObject *self, visitproc visit, void *arg)
{
    Init *c = (Init *)self;
    Py_VISIT(c->cls);
    Py_VISIT(c->names);
    Py_VISIT(c->defaults);
    Py_VISIT(c->required);
    Py_VISIT(c->original);
    return 0;
}

static int
init_clear(PyObject *self)
{
    Init *c = (Init *)self;
    Py_CLEAR(c->cls);
    Py_CLEAR(c->names);
    Py_CLEAR(c->defaults);
    Py_CLEAR(c->required);
    Py_CLEAR(c->original);
    return 0;
}

static void
init_dealloc(PyObject *self)
{
    PyObject_GC_UnTrack(self);
    init_clear(self);
    Py_TYPE(self)->tp_free(self);
}

static PyObject *
init_get(PyObject *self, PyObject *obj, PyObject *type)
{
    if (obj == NULL || obj == Py_None) {
        return Py_NewRef(self);
    }
    return PyMethod_New(self, obj);
}

static PyObject *
init_signature(PyObject *self, void *closure)
{
    /* inspect.signature(cls) reads it: attrs' __init__'s */
    PyObject *inspect = PyImport_ImportModule("inspect");
    if (inspect == NULL) {
        return NULL;
    }
    PyObject *signature = PyObject_CallMethod(inspect, "signature", "O", ((Init *)self)->original);
    Py_DECREF(inspect);
    return signature;
}

static PyObject *
init_wrapped(PyObject *self, void *closure)
{
    return Py_NewRef(((Init *)self)->original);
}

static PyObject *
init_repr(PyObject *self)
{
    return PyUnicode_FromFormat("<compiled __init__ of %s>", ((Init *)self)->cls->tp_name);
}

static PyGetSetDef init_getset[] = {
    {"__signature__", init_signature, NULL, "attrs' __init__'s signature", NULL},
    {"__wrapped__", init_wrapped, NULL, "attrs' __init__, which this replaces", NULL},
    {NULL},
};

static PyTypeObject InitType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "agui_generated._construct.Init",
    .tp_basicsize = offsetof(Init, offsets),
    .tp_itemsize = sizeof(Py_ssize_t),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL
        | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_vectorcall_offset = offsetof(Init, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_traverse = init_traverse,
    .tp_clear = init_clear,
    .tp_dealloc = init_dealloc,
    .tp_descr_get = init_get,
    .tp_getset = init_getset,
    .tp_repr = init_repr,
    .tp_doc = "A model's __init__: keyword arguments stored into the instance's slots.",
};

static PyObject *
initializer(PyObject *module, PyObject *args)
{
    PyTypeObject *cls;
    PyObject *names, *defaults, *required, *original;
    if (!PyArg_ParseTuple(args, "O!O!O!OO:initializer", &PyType_Type, &cls, &PyTuple_Type, &names,
                          &PyTuple_Type, &defaults, &required, &original)) {
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    if (n > MAX_MEMBERS || PyTuple_GET_SIZE(defaults) != n || cls->tp_dictoffset != 0
        || cls->tp_itemsize != 0) {
        PyErr_Format(PyExc_TypeError, "%s is not a plain slotted class of at most %d members",
                     cls->tp_name, MAX_MEMBERS);
        return NULL;
    }
    Init *c = PyObject_GC_NewVar(Init, &InitType, n);
    if (c == NULL) {
        return NULL;
    }
    c->vectorcall = init_call;
    c->cls = (PyTypeObject *)Py_NewRef(cls);
    c->names = PyTuple_New(n);
    c->defaults = Py_NewRef(defaults);
    c->required = Py_NewRef(required);
    c->original = Py_NewRef(original);
    if (c->names == NULL) {
        Py_DECREF(c);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *name = PyTuple_GET_ITEM(names, i);
        Py_ssize_t offset = slot_offset(cls, name);
        if (offset < 0) {
            Py_DECREF(c);
            return NULL;
        }
        c->offsets[i] = offset;
        Py_INCREF(name);
        PyUnicode_InternInPlace(&name);
        PyTuple_SET_ITEM(c->names, i, name);
    }
    PyObject_GC_Track(c);
    return (PyObject *)c;
}

static PyMethodDef methods[] = {
    {"initializer", initializer, METH_VARARGS,
     "initializer(cls, names, defaults, required, original): a compiled __init__ for cls."},
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
    if (PyType_Ready(&InitType) < 0
        || PyModule_AddObjectRef(module, "Init", (PyObject *)&InitType) < 0) {
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
