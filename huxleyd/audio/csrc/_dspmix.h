/* _dspmix: the mixer core (_mixcore.c) driven from the Python Mixer, with the GIL held
 * (part of the _dsp extension; _dsp.c registers these in its method table). */
#ifndef HUXLEYD_DSPMIX_H
#define HUXLEYD_DSPMIX_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* mix_period(out, channels, mixer, rings, unit, fade_out, fade_in, attack): Mixer.mix */
PyObject *mix_period(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* mixer_state(channels, mixer) -> bytes (an mc_mixer); mixer_restore(channels, mixer,
 * state): the core struct out of and back into the Python objects (the C feeder's). */
PyObject *mixer_state(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *mixer_restore(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* Interns the attribute names mix_period uses; at import. 0, or -1 (error set). */
int mix_period_init(void);

#endif
