/* _dspmix: _dsp.mix_period, the Python side of the C mixer core (_mixcore.c).
 * Part of the _dsp extension (_dsp.h); see the comment above mix_period. */
#include "_dspbuf.h" /* first: Python.h before the standard headers */
#include "_dspmix.h"
#include "_mixcore.h"

#include <stddef.h>
#include <string.h>

/* ---- the whole period: mix_period ----------------------------------------------------
 *
 * mix_period(out, channels, mixer, rings, unit, fade_out, fade_in, attack)
 *
 * Mixer.mix in one call: the core (_mixcore.c), which a GIL-free caller runs on its
 * own structs, fed here from the Python objects and written back to them, so the
 * rest of the engine reads the fields it always read. `channels` are the four
 * SourceChannels in the core's order (SOURCE_ORDER), `rings` their rings' sample
 * arrays, `mixer` the Mixer. The tables below are the only list of which attribute
 * each core field is: requests are read from the Request descriptors' slots
 * (`_req_*`), state is read and written back, the period's report only written. */

typedef enum { WHOLE, FLAG, REAL } kind_t;
typedef enum { IN, INOUT, OUT } dir_t;
typedef enum { ON_SELF, ON_RING, ON_LIMITER, ON_GATE } where_t;
typedef struct {
	const char *attr; /* the Python attribute (on the object `where` says) */
	size_t off;       /* the core field */
	kind_t kind;
	dir_t dir;
	where_t where; /* ON_GATE: item `off2` of the mixer's _req_gate tuple */
	Py_ssize_t item;
	PyObject *name; /* interned at import */
} field_t;

#define S(attr, f, k, d, w) {attr, offsetof(mc_source, f), k, d, w, 0, NULL}
static field_t source_fields[] = {
	S("capacity", capacity, WHOLE, IN, ON_RING),
	S("read_pos", read_pos, WHOLE, INOUT, ON_RING),
	S("write_pos", write_pos, WHOLE, IN, ON_RING),
	S("_req_gain", req_gain, REAL, IN, ON_SELF),
	S("_req_ducked", req_ducked, FLAG, IN, ON_SELF),
	S("_req_paused", req_paused, FLAG, IN, ON_SELF),
	S("_req_flush_seq", req_flush_seq, WHOLE, IN, ON_SELF),
	S("req_flush_to", req_flush_to, WHOLE, IN, ON_SELF),
	S("_gain", gain, REAL, INOUT, ON_SELF),
	S("_duck_db", duck_db, REAL, INOUT, ON_SELF),
	S("_paused", paused, FLAG, INOUT, ON_SELF),
	S("_flowing", flowing, FLAG, INOUT, ON_SELF),
	S("_flush_seq", flush_seq, WHOLE, INOUT, ON_SELF),
	S("pull_start", pull_start, WHOLE, OUT, ON_SELF),
	S("pull_offset", pull_offset, WHOLE, OUT, ON_SELF),
	S("pull_count", pull_count, WHOLE, INOUT, ON_SELF), /* last period's: the gate reads it */
	S("dry_count", dry_count, WHOLE, INOUT, ON_SELF),
	S("skip_from", skip_from, WHOLE, OUT, ON_SELF),
	S("skip_to", skip_to, WHOLE, OUT, ON_SELF),
};
#define M(attr, f, k, d, w) {attr, offsetof(mc_mixer, f), k, d, w, 0, NULL}
#define G(f, i) {"_req_gate", offsetof(mc_mixer, f), WHOLE, IN, ON_GATE, i, NULL}
static field_t mixer_fields[] = {
	M("period_samples", period, WHOLE, IN, ON_SELF),
	M("_ramp", ramp, WHOLE, IN, ON_SELF),
	M("_depth_db", depth_db, REAL, IN, ON_SELF),
	M("_attack_step_db", attack_step_db, REAL, IN, ON_SELF),
	M("_release_step_db", release_step_db, REAL, IN, ON_SELF),
	M("threshold", threshold, REAL, IN, ON_LIMITER),
	M("_release_step", release_step, REAL, IN, ON_LIMITER),
	M("_knee", knee, REAL, IN, ON_LIMITER),
	M("_req_master_gain", req_master, REAL, IN, ON_SELF),
	G(req_gate_seq, 0),
	G(req_gate_earcon_end, 1),
	G(req_gate_speech_pos, 2),
	M("_master_gain", master, REAL, INOUT, ON_SELF),
	M("_gate_seq", gate_seq, WHOLE, INOUT, ON_SELF),
	M("_gate_earcon_end", gate_earcon_end, WHOLE, INOUT, ON_SELF),
	M("_gate_speech_pos", gate_speech_pos, WHOLE, INOUT, ON_SELF),
	M("_gate_active", gate_active, FLAG, INOUT, ON_SELF),
	M("gain", limiter_gain, REAL, INOUT, ON_LIMITER),
	M("active_periods", limiter_active, WHOLE, INOUT, ON_LIMITER),
};
#define N_SOURCE_FIELDS (sizeof(source_fields) / sizeof(source_fields[0]))
#define N_MIXER_FIELDS (sizeof(mixer_fields) / sizeof(mixer_fields[0]))

static PyObject *RING, *LIMITER, *PLAYOUT, *SKIPS, *RECORD; /* interned attribute names */

static int intern_names(field_t *fields, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!(fields[i].name = PyUnicode_InternFromString(fields[i].attr)))
			return -1;
	return 0;
}

/* One field from Python into the core struct at `base`. 0, or -1 with an error set. */
static int read_field(const field_t *f, PyObject *value, char *base, const char *what)
{
	char *at = base + f->off;
	if (f->kind == REAL) {
		double v = PyFloat_AsDouble(value);
		if (v == -1.0 && PyErr_Occurred())
			return -1;
		memcpy(at, &v, sizeof(v));
	} else if (f->kind == FLAG) {
		int v = PyObject_IsTrue(value);
		if (v < 0)
			return -1;
		memcpy(at, &v, sizeof(v));
	} else {
		unsigned long long v = PyLong_AsUnsignedLongLong(value);
		if (v == (unsigned long long)-1 && PyErr_Occurred()) {
			PyErr_Format(PyExc_ValueError, "mix_period: %s.%s must be a whole number >= 0", what,
				     f->attr);
			return -1;
		}
		uint64_t w = (uint64_t)v;
		memcpy(at, &w, sizeof(w));
	}
	return 0;
}

static PyObject *field_value(const field_t *f, const char *base)
{
	const char *at = base + f->off;
	if (f->kind == REAL) {
		double v;
		memcpy(&v, at, sizeof(v));
		return PyFloat_FromDouble(v);
	}
	if (f->kind == FLAG) {
		int v;
		memcpy(&v, at, sizeof(v));
		return PyBool_FromLong(v);
	}
	uint64_t w;
	memcpy(&w, at, sizeof(w));
	return PyLong_FromUnsignedLongLong((unsigned long long)w);
}

/* The objects a table's fields live on, for one channel or the mixer. */
typedef struct {
	PyObject *self, *ring, *limiter, *gate;
} owners_t;

static PyObject *owner(const owners_t *o, where_t where)
{
	return where == ON_RING ? o->ring : where == ON_LIMITER ? o->limiter : o->self;
}

static int read_fields(const field_t *fields, size_t n, const owners_t *o, void *base,
		       const char *what)
{
	for (size_t i = 0; i < n; i++) {
		const field_t *f = &fields[i];
		if (f->dir == OUT)
			continue;
		PyObject *value;
		if (f->where == ON_GATE) {
			if (!PyTuple_Check(o->gate) || PyTuple_GET_SIZE(o->gate) != 3) {
				PyErr_SetString(PyExc_TypeError, "mix_period: Mixer._req_gate must be a 3-tuple");
				return -1;
			}
			value = Py_NewRef(PyTuple_GET_ITEM(o->gate, f->item));
		} else if (!(value = PyObject_GetAttr(owner(o, f->where), f->name))) {
			return -1;
		}
		int rc = read_field(f, value, base, what);
		Py_DECREF(value);
		if (rc < 0)
			return -1;
	}
	return 0;
}

/* State and report back into Python; only after the period mixed, so a failed read
 * above leaves every object as it was. */
static int write_fields(const field_t *fields, size_t n, const owners_t *o, const void *base)
{
	for (size_t i = 0; i < n; i++) {
		const field_t *f = &fields[i];
		if (f->dir == IN)
			continue;
		PyObject *value = field_value(f, base);
		if (!value || PyObject_SetAttr(owner(o, f->where), f->name, value) < 0) {
			Py_XDECREF(value);
			return -1;
		}
		Py_DECREF(value);
	}
	return 0;
}

/* Each source's owners: the channel and its ring (rings[i] is that ring's samples). */
static int source_owners(PyObject *channel, owners_t *o)
{
	o->self = channel;
	o->limiter = o->gate = NULL;
	o->ring = PyObject_GetAttr(channel, RING);
	return o->ring ? 0 : -1;
}

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

/* A flush this period dropped queued samples: channel.playout.skips.record(from, to) */
static int record_skip(PyObject *channel, const mc_source *s)
{
	if (s->skip_to <= s->skip_from)
		return 0;
	PyObject *playout = PyObject_GetAttr(channel, PLAYOUT);
	PyObject *skips = playout ? PyObject_GetAttr(playout, SKIPS) : NULL;
	PyObject *from = PyLong_FromUnsignedLongLong(s->skip_from);
	PyObject *to = PyLong_FromUnsignedLongLong(s->skip_to);
	PyObject *done = skips && from && to ? PyObject_CallMethodObjArgs(skips, RECORD, from, to, NULL)
					     : NULL;
	Py_XDECREF(playout);
	Py_XDECREF(skips);
	Py_XDECREF(from);
	Py_XDECREF(to);
	if (!done)
		return -1;
	Py_DECREF(done);
	return 0;
}

PyObject *mix_period(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	(void)self;
	if (nargs != 8) {
		PyErr_SetString(PyExc_TypeError, "mix_period takes 8 arguments");
		return NULL;
	}
	PyObject *channels = args[1], *mixer = args[2], *ring_arrays = args[3];
	if (!PyTuple_Check(channels) || PyTuple_GET_SIZE(channels) != MC_SOURCES ||
	    !PyTuple_Check(ring_arrays) || PyTuple_GET_SIZE(ring_arrays) != MC_SOURCES) {
		PyErr_Format(PyExc_TypeError, "mix_period: channels and rings must be tuples of %d",
			     MC_SOURCES);
		return NULL;
	}
	static const char *shape_names[] = {"unit", "fade_out", "fade_in", "attack"};
	buf_t out, shapes[4], rings[MC_SOURCES];
	owners_t src[MC_SOURCES], mix = {mixer, NULL, NULL, NULL};
	for (int i = 0; i < 4; i++)
		shapes[i].held = 0;
	for (int i = 0; i < MC_SOURCES; i++) {
		rings[i].held = 0;
		src[i].ring = NULL;
	}
	PyObject *result = NULL;
	mc_mixer m;
	memset(&m, 0, sizeof(m));
	if (take(&out, args[0], 4, 1, "out") < 0)
		goto done;
	Py_ssize_t shapes_n = PY_SSIZE_T_MAX;
	for (int i = 0; i < 4; i++) {
		if (take(&shapes[i], args[4 + i], 4, 0, shape_names[i]) < 0)
			goto done;
		if (COUNT(shapes[i]) < shapes_n)
			shapes_n = COUNT(shapes[i]);
	}
	if (!(mix.limiter = PyObject_GetAttr(mixer, LIMITER)) ||
	    !(mix.gate = PyObject_GetAttrString(mixer, "_req_gate")) ||
	    read_fields(mixer_fields, N_MIXER_FIELDS, &mix, &m, "Mixer") < 0)
		goto done;
	for (int i = 0; i < MC_SOURCES; i++) {
		if (take(&rings[i], PyTuple_GET_ITEM(ring_arrays, i), 2, 0, "ring") < 0 ||
		    source_owners(PyTuple_GET_ITEM(channels, i), &src[i]) < 0 ||
		    read_fields(source_fields, N_SOURCE_FIELDS, &src[i], &m.src[i], "SourceChannel") < 0)
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
	if (write_fields(mixer_fields, N_MIXER_FIELDS, &mix, &m) < 0)
		goto done;
	for (int i = 0; i < MC_SOURCES; i++)
		if (write_fields(source_fields, N_SOURCE_FIELDS, &src[i], &m.src[i]) < 0 ||
		    record_skip(src[i].self, &m.src[i]) < 0)
			goto done;
	result = Py_NewRef(Py_None);
done:
	drop(&out);
	for (int i = 0; i < 4; i++)
		drop(&shapes[i]);
	for (int i = 0; i < MC_SOURCES; i++) {
		drop(&rings[i]);
		Py_XDECREF(src[i].ring);
	}
	Py_XDECREF(mix.limiter);
	Py_XDECREF(mix.gate);
	return result;
}

/* mixer_state(channels, mixer) -> bytes: the whole core struct (requests, state, ring
 * positions) as mix_period would read it, for the C feeder (_feedthread.c), which runs the
 * same core on its own copy: the tables above stay the only list of the fields. */
PyObject *mixer_state(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	(void)self;
	if (nargs != 2 || !PyTuple_Check(args[0]) || PyTuple_GET_SIZE(args[0]) != MC_SOURCES) {
		PyErr_Format(PyExc_TypeError, "mixer_state(channels: tuple of %d, mixer)", MC_SOURCES);
		return NULL;
	}
	mc_mixer m;
	memset(&m, 0, sizeof(m));
	owners_t src[MC_SOURCES], mix = {args[1], NULL, NULL, NULL};
	for (int i = 0; i < MC_SOURCES; i++)
		src[i].ring = NULL;
	PyObject *result = NULL;
	if (!(mix.limiter = PyObject_GetAttr(args[1], LIMITER)) ||
	    !(mix.gate = PyObject_GetAttrString(args[1], "_req_gate")) ||
	    read_fields(mixer_fields, N_MIXER_FIELDS, &mix, &m, "Mixer") < 0)
		goto done;
	for (int i = 0; i < MC_SOURCES; i++)
		if (source_owners(PyTuple_GET_ITEM(args[0], i), &src[i]) < 0 ||
		    read_fields(source_fields, N_SOURCE_FIELDS, &src[i], &m.src[i], "SourceChannel") < 0)
			goto done;
	result = PyBytes_FromStringAndSize((const char *)&m, (Py_ssize_t)sizeof(m));
done:
	for (int i = 0; i < MC_SOURCES; i++)
		Py_XDECREF(src[i].ring);
	Py_XDECREF(mix.limiter);
	Py_XDECREF(mix.gate);
	return result;
}

/* mixer_restore(channels, mixer, state): the C feeder stopped; its state (mixer_state's
 * layout) back into the Python objects, so the Python path carries on where it left. */
PyObject *mixer_restore(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	(void)self;
	if (nargs != 3 || !PyTuple_Check(args[0]) || PyTuple_GET_SIZE(args[0]) != MC_SOURCES ||
	    !PyBytes_Check(args[2]) || PyBytes_GET_SIZE(args[2]) != (Py_ssize_t)sizeof(mc_mixer)) {
		PyErr_Format(PyExc_TypeError, "mixer_restore(channels: tuple of %d, mixer, state: %zu bytes)",
			     MC_SOURCES, sizeof(mc_mixer));
		return NULL;
	}
	mc_mixer m;
	memcpy(&m, PyBytes_AS_STRING(args[2]), sizeof(m));
	owners_t src[MC_SOURCES], mix = {args[1], NULL, NULL, NULL};
	for (int i = 0; i < MC_SOURCES; i++)
		src[i].ring = NULL;
	PyObject *result = NULL;
	if (!(mix.limiter = PyObject_GetAttr(args[1], LIMITER)) ||
	    write_fields(mixer_fields, N_MIXER_FIELDS, &mix, &m) < 0)
		goto done;
	for (int i = 0; i < MC_SOURCES; i++)
		if (source_owners(PyTuple_GET_ITEM(args[0], i), &src[i]) < 0 ||
		    write_fields(source_fields, N_SOURCE_FIELDS, &src[i], &m.src[i]) < 0)
			goto done;
	result = Py_NewRef(Py_None);
done:
	for (int i = 0; i < MC_SOURCES; i++)
		Py_XDECREF(src[i].ring);
	Py_XDECREF(mix.limiter);
	return result;
}

int mix_period_init(void)
{
	if (intern_names(source_fields, N_SOURCE_FIELDS) < 0 ||
	    intern_names(mixer_fields, N_MIXER_FIELDS) < 0 ||
	    !(RING = PyUnicode_InternFromString("ring")) ||
	    !(LIMITER = PyUnicode_InternFromString("limiter")) ||
	    !(PLAYOUT = PyUnicode_InternFromString("playout")) ||
	    !(SKIPS = PyUnicode_InternFromString("skips")) ||
	    !(RECORD = PyUnicode_InternFromString("record")))
		return -1;
	return 0;
}
