/* _sourcering: the SourceRing type, Python's side of a source ring. See _sourcering.h. */
#include "_sourcering.h"

static int SourceRing_init(SourceRing *r, PyObject *args, PyObject *kwargs)
{
	static char *kw[] = {"capacity", NULL};
	long long capacity;
	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "L", kw, &capacity))
		return -1;
	if (r->buf) {
		PyErr_SetString(PyExc_RuntimeError, "SourceRing is already initialised");
		return -1;
	}
	if (capacity < 1 || capacity > (1LL << 31)) {
		PyErr_Format(PyExc_ValueError, "SourceRing: capacity %lld is not 1 to 2**31 samples",
			     capacity);
		return -1;
	}
	r->buf = PyMem_Calloc((size_t)capacity, sizeof(int16_t));
	if (!r->buf) {
		PyErr_NoMemory();
		return -1;
	}
	r->shape[0] = (Py_ssize_t)capacity;
	r->strides[0] = (Py_ssize_t)sizeof(int16_t);
	r->capacity = (uint64_t)capacity;
	return 0;
}

static void SourceRing_dealloc(SourceRing *r)
{
	PyMem_Free(r->buf);
	Py_TYPE(r)->tp_free((PyObject *)r);
}

int sourcering_open(SourceRing *r)
{
	if (r->capacity)
		return 1;
	PyErr_SetString(PyExc_RuntimeError, "SourceRing is not open: __init__ did not run or failed");
	return 0;
}

/* The samples as a writable 1-D int16 buffer (numpy.frombuffer): the producer's side. */
static int SourceRing_getbuffer(SourceRing *r, Py_buffer *view, int flags)
{
	if (!sourcering_open(r)) {
		view->obj = NULL;
		return -1;
	}
	view->obj = Py_NewRef((PyObject *)r);
	view->buf = r->buf;
	view->len = (Py_ssize_t)(r->capacity * sizeof(int16_t));
	view->readonly = 0;
	view->itemsize = (Py_ssize_t)sizeof(int16_t);
	view->format = (flags & PyBUF_FORMAT) ? "h" : NULL;
	view->ndim = 1;
	view->shape = (flags & PyBUF_ND) ? r->shape : NULL;
	view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? r->strides : NULL;
	view->suboffsets = NULL;
	view->internal = NULL;
	return 0;
}

static PyBufferProcs SourceRing_buffer = {.bf_getbuffer = (getbufferproc)SourceRing_getbuffer};

static PyObject *SourceRing_get_capacity(SourceRing *r, void *closure)
{
	(void)closure;
	return PyLong_FromUnsignedLongLong(r->capacity);
}

static PyObject *SourceRing_get_wpos(SourceRing *r, void *closure)
{
	(void)closure;
	return PyLong_FromUnsignedLongLong(atomic_load_explicit(&r->wpos, memory_order_acquire));
}

static PyObject *SourceRing_get_rpos(SourceRing *r, void *closure)
{
	(void)closure;
	return PyLong_FromUnsignedLongLong(atomic_load_explicit(&r->rpos, memory_order_acquire));
}

static int position_arg(SourceRing *r, PyObject *value, const char *name, uint64_t *out)
{
	if (!sourcering_open(r))
		return -1;
	if (!value) {
		PyErr_Format(PyExc_AttributeError, "SourceRing.%s cannot be deleted", name);
		return -1;
	}
	unsigned long long v = PyLong_AsUnsignedLongLong(value);
	if (v == (unsigned long long)-1 && PyErr_Occurred()) {
		PyErr_Format(PyExc_ValueError, "SourceRing.%s must be a whole number >= 0", name);
		return -1;
	}
	*out = (uint64_t)v;
	return 0;
}

/* the producer publishes: never behind the reader, never more than a ring ahead of it */
static int SourceRing_set_wpos(SourceRing *r, PyObject *value, void *closure)
{
	(void)closure;
	uint64_t w;
	if (position_arg(r, value, "write_pos", &w) < 0)
		return -1;
	uint64_t rp = atomic_load_explicit(&r->rpos, memory_order_acquire);
	if (w < rp || w - rp > r->capacity) {
		PyErr_Format(PyExc_ValueError,
			     "SourceRing.write_pos = %llu: must be read_pos %llu to read_pos + capacity %llu",
			     (unsigned long long)w, (unsigned long long)rp, (unsigned long long)r->capacity);
		return -1;
	}
	atomic_store_explicit(&r->wpos, w, memory_order_release);
	return 0;
}

/* the consumer publishes (the Python mixer while no feeder runs): never past the writer */
static int SourceRing_set_rpos(SourceRing *r, PyObject *value, void *closure)
{
	(void)closure;
	uint64_t rp;
	if (position_arg(r, value, "read_pos", &rp) < 0)
		return -1;
	uint64_t w = atomic_load_explicit(&r->wpos, memory_order_acquire);
	if (rp > w) {
		PyErr_Format(PyExc_ValueError, "SourceRing.read_pos = %llu: past write_pos %llu",
			     (unsigned long long)rp, (unsigned long long)w);
		return -1;
	}
	atomic_store_explicit(&r->rpos, rp, memory_order_release);
	return 0;
}

/* the producer says where its audio ends for now (see endpos) */
static PyObject *SourceRing_get_endpos(SourceRing *r, void *closure)
{
	(void)closure;
	return PyLong_FromUnsignedLongLong(atomic_load_explicit(&r->endpos, memory_order_acquire));
}

static int SourceRing_set_endpos(SourceRing *r, PyObject *value, void *closure)
{
	(void)closure;
	uint64_t e;
	if (position_arg(r, value, "end_pos", &e) < 0)
		return -1;
	atomic_store_explicit(&r->endpos, e, memory_order_release);
	return 0;
}

static PyGetSetDef SourceRing_getset[] = {
	{"end_pos", (getter)SourceRing_get_endpos, (setter)SourceRing_set_endpos,
	 "Where the producer's audio ends for now (producer stores, release).", NULL},
	{"capacity", (getter)SourceRing_get_capacity, NULL, "Samples the ring holds.", NULL},
	{"write_pos", (getter)SourceRing_get_wpos, (setter)SourceRing_set_wpos,
	 "Samples ever written (producer stores, release).", NULL},
	{"read_pos", (getter)SourceRing_get_rpos, (setter)SourceRing_set_rpos,
	 "Samples ever consumed (consumer stores, release).", NULL},
	{NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject SourceRingType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "huxleyd.audio._rt.SourceRing",
	.tp_basicsize = sizeof(SourceRing),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "One source's int16 ring, owned in C: Python writes, the C feeder reads.",
	.tp_new = PyType_GenericNew,
	.tp_init = (initproc)SourceRing_init,
	.tp_dealloc = (destructor)SourceRing_dealloc,
	.tp_as_buffer = &SourceRing_buffer,
	.tp_getset = SourceRing_getset,
};
