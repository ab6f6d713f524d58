/* _dspmix: the mixer core (_mixcore.c) driven from Python's Mixer, with the GIL held
 * (part of the _dsp extension; _dsp.c registers these in its method table). Python
 * passes the core's struct as a buffer it packed (huxleyd/audio/corestate.py): C
 * reads no Python attribute. */
#ifndef HUXLEYD_DSPMIX_H
#define HUXLEYD_DSPMIX_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* mix_period(out, state, rings, unit, fade_out, fade_in, attack): Mixer.mix */
PyObject *mix_period(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* Adds the struct's layout to the module (STATE_SIZE, MIXER_FIELDS, SOURCE_FIELDS,
 * SOURCE_OFFSETS); at import. 0, or -1 (error set). */
int mix_layout_add(PyObject *module);

#endif
