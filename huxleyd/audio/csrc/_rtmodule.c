/* _rtmodule: the _rt extension's module (PyInit__rt): it registers the speaker's Output
 * (_rtout.c), the mic's Input (_rtin.c), and the C feeder's SourceRing and Feeder
 * (_feeder.c), and the module functions. The one file that knows all three, so none
 * of them includes another's module-level parts: _rtout.c knows nothing of the
 * feeder, and the feeder reaches the Output only through _rt.h's rt_output_* hooks. */
#include "_rt.h" /* first: Python.h before the standard headers */
#include "_feeder.h"

#include <pa_linux_alsa.h>

/* set_alsa_periods(n): how many periods PortAudio's ALSA host gives the next streams it
 * opens (process-wide, PyAudio's too). More periods = a deeper capture buffer. */
static PyObject *set_alsa_periods(PyObject *self, PyObject *arg)
{
	(void)self;
	long n = PyLong_AsLong(arg);
	if (n == -1 && PyErr_Occurred())
		return NULL;
	PaError err = PaAlsa_SetNumPeriods((int)n);
	if (err != paNoError)
		return rt_pa_error("PaAlsa_SetNumPeriods", err);
	Py_RETURN_NONE;
}

/* _set_copy_pause_ns(ns): tests only. The next Input.read copy sleeps ns half-way,
 * so a test can hold a late reader inside its copy while the callback writes. */
static PyObject *set_copy_pause_ns(PyObject *self, PyObject *arg)
{
	(void)self;
	long ns = PyLong_AsLong(arg);
	if (ns == -1 && PyErr_Occurred())
		return NULL;
	if (ns < 0 || ns > 1000000000L)
		return PyErr_Format(PyExc_ValueError, "_set_copy_pause_ns: %ld ns is not 0 to 1 s", ns);
	rt_set_copy_pause_ns(ns);
	Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
	{"_set_copy_pause_ns", set_copy_pause_ns, METH_O, "Tests only: pause the next mic copy half-way."},
	{"set_alsa_periods", set_alsa_periods, METH_O, "Periods per ALSA buffer for new streams."},
	{"_mixer_holding", feeder_mixer_holding, METH_VARARGS,
	 "Tests only: the C feeder's (mask, idle) for an mc_mixer state."},
	{"_hold_shrunk", feeder_hold_shrunk_py, METH_VARARGS,
	 "Tests only: the playout buffer's target (ms) after a calm stretch."},
	{NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
	PyModuleDef_HEAD_INIT,
	.m_name = "_rt",
	.m_doc = "The speaker's (Output) and the mic's (Input) deadlines in C (PortAudio callbacks).",
	.m_size = -1,
	.m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__rt(void)
{
	if (PyType_Ready(&OutputType) < 0 || PyType_Ready(&InputType) < 0)
		return NULL;
	PyObject *m = PyModule_Create(&module);
	if (!m)
		return NULL;
	/* PyModule_AddType takes its own reference and drops nothing on failure */
	if (PyModule_AddType(m, &OutputType) < 0 || PyModule_AddType(m, &InputType) < 0 ||
	    feeder_add_types(m) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
