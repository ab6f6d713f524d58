/* _dspmix: _dsp.mix_period, the Python side of the C mixer core (_mixcore.c).
 * Part of the _dsp extension (_dsp.h); see the comment above mix_period. */
#include "_dspbuf.h" /* first: Python.h before the standard headers */
#include "_dspmix.h"
#include "_mixcore.h"

#include <stddef.h>
#include <string.h>

/* ---- the core's struct, as Python sees it ---------------------------------------------
 *
 * Python never hands C its objects: it packs the mixer's requests and state into one
 * buffer laid out as an mc_mixer (huxleyd/audio/corestate.py), and reads the state and
 * the period's report back out of it. C reads no Python attribute. What Python needs
 * to pack is this layout, exported at import: STATE_SIZE, the mixer's fields
 * (MIXER_FIELDS) and each source's (SOURCE_FIELDS, at SOURCE_OFFSETS[i] in the struct),
 * each as (core field name, byte offset, struct code). The pointers (the rings'
 * samples, the shapes) are not fields: mix_period sets them from its buffer
 * arguments and clears them again before the struct goes back to Python. */

#define F(type, name, code) {#name, offsetof(type, name), code}
typedef struct {
	const char *name;
	size_t off;
	const char *code; /* the struct module's: Q uint64_t, d double, i int */
} layout_t;

static const layout_t MIXER_LAYOUT[] = {
	F(mc_mixer, period, "Q"),
	F(mc_mixer, ramp, "Q"),
	F(mc_mixer, depth_db, "d"),
	F(mc_mixer, attack_step_db, "d"),
	F(mc_mixer, release_step_db, "d"),
	F(mc_mixer, threshold, "d"),
	F(mc_mixer, release_step, "d"),
	F(mc_mixer, knee, "d"),
	F(mc_mixer, req_master, "d"),
	F(mc_mixer, req_gate_seq, "Q"),
	F(mc_mixer, req_gate_earcon_end, "Q"),
	F(mc_mixer, req_gate_speech_pos, "Q"),
	F(mc_mixer, master, "d"),
	F(mc_mixer, gate_seq, "Q"),
	F(mc_mixer, gate_earcon_end, "Q"),
	F(mc_mixer, gate_speech_pos, "Q"),
	F(mc_mixer, gate_active, "i"),
	F(mc_mixer, limiter_gain, "d"),
	F(mc_mixer, limiter_active, "Q"),
};
static const layout_t SOURCE_LAYOUT[] = {
	F(mc_source, capacity, "Q"),
	F(mc_source, read_pos, "Q"),
	F(mc_source, write_pos, "Q"),
	F(mc_source, req_gain, "d"),
	F(mc_source, req_ducked, "i"),
	F(mc_source, req_paused, "i"),
	F(mc_source, req_flush_seq, "Q"),
	F(mc_source, req_flush_to, "Q"),
	F(mc_source, held, "i"),
	F(mc_source, gain, "d"),
	F(mc_source, duck_db, "d"),
	F(mc_source, paused, "i"),
	F(mc_source, flowing, "i"),
	F(mc_source, flush_seq, "Q"),
	F(mc_source, pull_start, "Q"),
	F(mc_source, pull_offset, "Q"),
	F(mc_source, pull_count, "Q"),
	F(mc_source, dry_count, "Q"),
	F(mc_source, skip_from, "Q"),
	F(mc_source, skip_to, "Q"),
};
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static PyObject *layout_tuple(const layout_t *fields, size_t n)
{
	PyObject *t = PyTuple_New((Py_ssize_t)n);
	for (size_t i = 0; t && i < n; i++) {
		PyObject *item = Py_BuildValue("(sns)", fields[i].name, (Py_ssize_t)fields[i].off,
					       fields[i].code);
		if (!item) {
			Py_CLEAR(t);
			break;
		}
		PyTuple_SET_ITEM(t, (Py_ssize_t)i, item);
	}
	return t;
}

int mix_layout_add(PyObject *module)
{
	PyObject *mixer = layout_tuple(MIXER_LAYOUT, N_OF(MIXER_LAYOUT));
	PyObject *source = layout_tuple(SOURCE_LAYOUT, N_OF(SOURCE_LAYOUT));
	PyObject *offsets = PyTuple_New(MC_SOURCES);
	for (Py_ssize_t i = 0; offsets && i < MC_SOURCES; i++) {
		PyObject *off = PyLong_FromSize_t(offsetof(mc_mixer, src) + (size_t)i * sizeof(mc_source));
		if (!off) {
			Py_CLEAR(offsets);
			break;
		}
		PyTuple_SET_ITEM(offsets, i, off);
	}
	int bad = !mixer || !source || !offsets ||
		  PyModule_AddObjectRef(module, "MIXER_FIELDS", mixer) < 0 ||
		  PyModule_AddObjectRef(module, "SOURCE_FIELDS", source) < 0 ||
		  PyModule_AddObjectRef(module, "SOURCE_OFFSETS", offsets) < 0 ||
		  PyModule_AddIntConstant(module, "STATE_SIZE", (long)sizeof(mc_mixer)) < 0;
	Py_XDECREF(mixer);
	Py_XDECREF(source);
	Py_XDECREF(offsets);
	return bad ? -1 : 0;
}

/* ---- the whole period: mix_period -----------------------------------------------------
 *
 * mix_period(out, state, rings, unit, fade_out, fade_in, attack)
 *
 * Mixer.mix in one call: `state` is a writable buffer of STATE_SIZE bytes, an mc_mixer
 * Python packed (requests, state, the rings' positions), `rings` the four sources' sample
 * arrays in the core's order (SOURCE_ORDER). The core mixes the period into `out`; the
 * state and the period's report are written back into `state` (its pointers cleared),
 * and only after the period mixed: a refused state leaves `out` and `state` as they were. */

/* The core's state is consistent: it may index the rings and shapes with it. */
static int check_mixer(const mc_mixer *m, Py_ssize_t out_n, Py_ssize_t shapes_n,
		       const buf_t *rings)
{
	if (m->period == 0 || m->period > (uint64_t)out_n || m->period > (uint64_t)shapes_n ||
	    m->ramp == 0 || m->ramp > m->period) {
		PyErr_Format(PyExc_ValueError,
			     "mix_period: period %llu and ramp %llu need 0 < ramp <= period <= the "
			     "buffers (out %zd, shapes %zd)",
			     (unsigned long long)m->period, (unsigned long long)m->ramp, out_n, shapes_n);
		return -1;
	}
	for (int i = 0; i < MC_SOURCES; i++) {
		const mc_source *s = &m->src[i];
		if (s->capacity == 0 || s->capacity != (uint64_t)COUNT(rings[i]) ||
		    s->read_pos > s->write_pos || s->write_pos - s->read_pos > s->capacity) {
			PyErr_Format(PyExc_ValueError,
				     "mix_period: source %d has read_pos %llu, write_pos %llu, capacity "
				     "%llu and a ring of %zd samples: not a ring",
				     i, (unsigned long long)s->read_pos, (unsigned long long)s->write_pos,
				     (unsigned long long)s->capacity, COUNT(rings[i]));
			return -1;
		}
	}
	return 0;
}

static void clear_pointers(mc_mixer *m)
{
	m->unit = m->fade_out = m->fade_in = m->attack = NULL;
	for (int i = 0; i < MC_SOURCES; i++)
		m->src[i].samples = NULL;
}

PyObject *mix_period(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	(void)self;
	if (nargs != 7) {
		PyErr_SetString(PyExc_TypeError, "mix_period takes 7 arguments");
		return NULL;
	}
	PyObject *ring_arrays = args[2];
	if (!PyTuple_Check(ring_arrays) || PyTuple_GET_SIZE(ring_arrays) != MC_SOURCES) {
		PyErr_Format(PyExc_TypeError, "mix_period: rings must be a tuple of %d", MC_SOURCES);
		return NULL;
	}
	static const char *shape_names[] = {"unit", "fade_out", "fade_in", "attack"};
	buf_t out, shapes[4], rings[MC_SOURCES];
	Py_buffer state;
	int state_held = 0;
	out.held = 0;
	for (int i = 0; i < 4; i++)
		shapes[i].held = 0;
	for (int i = 0; i < MC_SOURCES; i++)
		rings[i].held = 0;
	PyObject *result = NULL;
	mc_mixer m;
	if (PyObject_GetBuffer(args[1], &state, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
		goto done;
	state_held = 1;
	if ((size_t)state.len != sizeof(mc_mixer)) {
		PyErr_Format(PyExc_ValueError, "mix_period: state is %zd bytes, an mc_mixer is %zu",
			     state.len, sizeof(mc_mixer));
		goto done;
	}
	memcpy(&m, state.buf, sizeof(m));
	if (take(&out, args[0], 4, 1, "out") < 0)
		goto done;
	Py_ssize_t shapes_n = PY_SSIZE_T_MAX;
	for (int i = 0; i < 4; i++) {
		if (take(&shapes[i], args[3 + i], 4, 0, shape_names[i]) < 0)
			goto done;
		if (COUNT(shapes[i]) < shapes_n)
			shapes_n = COUNT(shapes[i]);
	}
	for (int i = 0; i < MC_SOURCES; i++) {
		if (take(&rings[i], PyTuple_GET_ITEM(ring_arrays, i), 2, 0, "ring") < 0)
			goto done;
		m.src[i].samples = rings[i].view.buf;
	}
	if (check_mixer(&m, COUNT(out), shapes_n, rings) < 0)
		goto done;
	m.unit = shapes[0].view.buf;
	m.fade_out = shapes[1].view.buf;
	m.fade_in = shapes[2].view.buf;
	m.attack = shapes[3].view.buf;
	mc_mix_period(&m, out.view.buf);
	clear_pointers(&m);
	memcpy(state.buf, &m, sizeof(m));
	result = Py_NewRef(Py_None);
done:
	if (state_held)
		PyBuffer_Release(&state);
	drop(&out);
	for (int i = 0; i < 4; i++)
		drop(&shapes[i]);
	for (int i = 0; i < MC_SOURCES; i++)
		drop(&rings[i]);
	return result;
}
