/* _aec: Speex's acoustic echo canceller (libspeexdsp), for the microphone.
 *
 * One object, Canceller(frame, filter_length, rate_hz, suppress): process()
 * takes one frame of the mic (near end) and one of what the speaker played
 * at the same moment (far end, already aligned by the caller) as PCM16
 * bytes, and returns the mic with the echo removed. `suppress` adds Speex's
 * preprocessor as a residual echo suppressor (it also removes some
 * stationary noise): the adaptive filter alone leaves the part of the echo
 * it cannot model (the speaker's distortion, a changing room).
 *
 * Allocation happens in the constructor only; process() writes into a
 * preallocated buffer and returns a new bytes object of it. The GIL is held
 * (a frame is ~50 us of work): the caller runs it off the audio thread's
 * deadline or accepts that cost.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <speex/speex_echo.h>
#include <speex/speex_preprocess.h>
#include <stdint.h>
#include <string.h>

typedef struct {
	PyObject_HEAD
	SpeexEchoState *echo;
	SpeexPreprocessState *pre;
	int frame;
	spx_int16_t *out;
} Canceller;

static void canceller_dealloc(Canceller *self)
{
	if (self->pre)
		speex_preprocess_state_destroy(self->pre);
	if (self->echo)
		speex_echo_state_destroy(self->echo);
	PyMem_Free(self->out);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static int canceller_init(Canceller *self, PyObject *args, PyObject *kwargs)
{
	static char *names[] = {"frame", "filter_length", "rate_hz", "suppress", NULL};
	int frame, filter_length, rate, suppress = 1;
	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "iii|p", names, &frame, &filter_length, &rate,
					 &suppress))
		return -1;
	if (frame <= 0 || filter_length < frame || rate <= 0) {
		PyErr_Format(PyExc_ValueError,
			     "Canceller: expected frame > 0, filter_length >= frame, rate_hz > 0; "
			     "got %d, %d, %d", frame, filter_length, rate);
		return -1;
	}
	if (self->echo) {
		PyErr_SetString(PyExc_RuntimeError, "Canceller: already initialised");
		return -1;
	}
	self->out = PyMem_Calloc((size_t)frame, sizeof(spx_int16_t));
	self->echo = speex_echo_state_init(frame, filter_length);
	if (!self->out || !self->echo) {
		PyErr_NoMemory();
		return -1;
	}
	speex_echo_ctl(self->echo, SPEEX_ECHO_SET_SAMPLING_RATE, &rate);
	if (suppress) {
		self->pre = speex_preprocess_state_init(frame, rate);
		if (!self->pre) {
			PyErr_NoMemory();
			return -1;
		}
		speex_preprocess_ctl(self->pre, SPEEX_PREPROCESS_SET_ECHO_STATE, self->echo);
	}
	self->frame = frame;
	return 0;
}

static PyObject *canceller_process(Canceller *self, PyObject *args)
{
	Py_buffer near, far;
	if (!self->echo) {
		PyErr_SetString(PyExc_RuntimeError, "Canceller: not initialised");
		return NULL;
	}
	if (!PyArg_ParseTuple(args, "y*y*", &near, &far))
		return NULL;
	Py_ssize_t want = (Py_ssize_t)self->frame * 2;
	PyObject *result = NULL;
	if (near.len != want || far.len != want) {
		PyErr_Format(PyExc_ValueError,
			     "Canceller.process: expected %zd bytes (one frame of PCM16) of each, "
			     "got mic %zd and far end %zd", want, near.len, far.len);
		goto done;
	}
	speex_echo_cancellation(self->echo, (const spx_int16_t *)near.buf,
				(const spx_int16_t *)far.buf, self->out);
	if (self->pre)
		speex_preprocess_run(self->pre, self->out);
	result = PyBytes_FromStringAndSize((const char *)self->out, want);
done:
	PyBuffer_Release(&near);
	PyBuffer_Release(&far);
	return result;
}

static PyObject *canceller_reset(Canceller *self, PyObject *Py_UNUSED(ignored))
{
	if (self->echo)
		speex_echo_state_reset(self->echo);
	Py_RETURN_NONE;
}

static PyMethodDef canceller_methods[] = {
	{"process", (PyCFunction)canceller_process, METH_VARARGS,
	 "process(mic, far) -> bytes: one frame of PCM16 each; the mic without the echo"},
	{"reset", (PyCFunction)canceller_reset, METH_NOARGS, "forget the learned echo path"},
	{NULL, NULL, 0, NULL},
};

static PyTypeObject CancellerType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "huxleyd.audio._aec.Canceller",
	.tp_basicsize = sizeof(Canceller),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "Canceller(frame, filter_length, rate_hz, suppress=True): Speex's echo canceller",
	.tp_new = PyType_GenericNew,
	.tp_init = (initproc)canceller_init,
	.tp_dealloc = (destructor)canceller_dealloc,
	.tp_methods = canceller_methods,
};

static struct PyModuleDef module = {
	PyModuleDef_HEAD_INIT, "_aec", "Speex's acoustic echo canceller", -1, NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__aec(void)
{
	if (PyType_Ready(&CancellerType) < 0)
		return NULL;
	PyObject *m = PyModule_Create(&module);
	if (!m)
		return NULL;
	Py_INCREF(&CancellerType);
	if (PyModule_AddObject(m, "Canceller", (PyObject *)&CancellerType) < 0) {
		Py_DECREF(&CancellerType);
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
