/* What _dsp.c (the module, the per-period arithmetic) and _dspmix.c (mix_period)
 * share: one extension, huxleyd.audio._dsp. */
#ifndef HUXLEYD_DSP_H
#define HUXLEYD_DSP_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "_mixcore.h"

/* A buffer taken from a Python object (held: release it with drop). */
typedef struct {
	Py_buffer view;
	int held;
} buf_t;

#define COUNT(b) ((b).view.len / (b).view.itemsize)

/* `obj`'s buffer as float64 (itemsize 8), float32 (4) or int16 (2) items, C-contiguous,
 * writable if asked; the format is checked, not only the size. 0, or -1 (error set). */
int take(buf_t *b, PyObject *obj, Py_ssize_t itemsize, int writable, const char *name);

/* Release a buffer take() held (idempotent). */
void drop(buf_t *b);

/* 0 when have >= want, else -1 with a ValueError naming `name`. */
int need(Py_ssize_t have, Py_ssize_t want, const char *name);

/* mix_period(out, channels, mixer, rings, unit, fade_out, fade_in, attack): Mixer.mix */
PyObject *mix_period(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* mixer_state(channels, mixer) -> bytes (an mc_mixer); mixer_restore(channels, mixer,
 * state): the core struct out of and back into the Python objects (the C feeder's). */
PyObject *mixer_state(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *mixer_restore(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* Interns the attribute names mix_period uses; at import. 0, or -1 (error set). */
int mix_period_init(void);

#endif
