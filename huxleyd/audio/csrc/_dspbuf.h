/* _dspbuf: the buffers the _dsp extension's functions take from Python (numpy arrays,
 * through the buffer protocol). Shared by _dsp.c and _dspmix.c, which include it and
 * nothing of each other's. */
#ifndef HUXLEYD_DSPBUF_H
#define HUXLEYD_DSPBUF_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

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

#endif
