/* _dspbuf: the _dsp extension's buffer helpers (take, drop, need), shared by _dsp.c
 * (the per-period arithmetic, the module) and _dspmix.c (mix_period). See _dspbuf.h. */
#include "_dspbuf.h"

/* Does a buffer format string name the native-order item `code` ('f' float32, 'h' int16)?
 * numpy writes "f"/"h"; struct-style prefixes for native or little-endian order are
 * the same thing on the little-endian machines this runs on. A NULL format is bytes. */
static int format_is(const char *format, char code)
{
	if (!format)
		return 0;
	if (*format == '@' || *format == '=' || (*format == '<' && PY_LITTLE_ENDIAN))
		format++;
	return format[0] == code && format[1] == '\0';
}

/* Take `obj`'s buffer as float64 (itemsize 8), float32 (4) or int16 (2) items; writable if
 * asked. The format is checked, not only the size: an int32 array is not float32.
 * 0 or -1 (error set). */
int take(buf_t *b, PyObject *obj, Py_ssize_t itemsize, int writable, const char *name)
{
	b->held = 0;
	int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
	if (PyObject_GetBuffer(obj, &b->view, flags) < 0)
		return -1;
	b->held = 1;
	char code = itemsize == 8 ? 'd' : itemsize == 4 ? 'f' : 'h';
	if (b->view.itemsize != itemsize || !format_is(b->view.format, code)) {
		PyErr_Format(PyExc_TypeError, "%s: expected %s items (format '%c'), got format '%s' of %zd bytes",
			     name, itemsize == 8 ? "float64" : itemsize == 4 ? "float32" : "int16", code,
			     b->view.format ? b->view.format : "B", b->view.itemsize);
		return -1;
	}
	return 0;
}

void drop(buf_t *b)
{
	if (b->held)
		PyBuffer_Release(&b->view);
	b->held = 0;
}

int need(Py_ssize_t have, Py_ssize_t want, const char *name)
{
	if (have < want) {
		PyErr_Format(PyExc_ValueError, "%s: needs %zd items, has %zd", name, want, have);
		return -1;
	}
	return 0;
}

