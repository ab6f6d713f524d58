/* _feeder: the C feeder's Python side (part of the _rt extension): the Feeder type
 * (init, start, stop, request, wake, the report log's peek/pop/pending, status) and the
 * module's registration of it and of SourceRing. See _feeder.h for the picture. Every
 * call here holds the GIL; the thread, the seqlock and the log are _feedthread.c's,
 * and this file touches their atomics only through the functions it declares (the
 * counters status() and idle() read are said at their fields in _feedthread.h).
 */
#include "_feedthread.h" /* first: Python.h before the standard headers */
#include "_feeder.h"
#include "_polyphase.h"

#include <errno.h>
#include <sched.h>
#include <string.h>

/* The report's field names, in report_t's order: exported as REPORT_HEAD and
 * REPORT_SOURCE (fed.py reads the layout from them, never from a copy). */
static const char *REPORT_HEAD[] = {"dev_start", "limiter_active", "peak", "power", "holding"};
static const char *REPORT_SOURCE[] = {"pull_start", "pull_offset", "pull_count",
				      "skip_from",  "skip_to",     "dry_count"};
_Static_assert(sizeof(REPORT_HEAD) / sizeof(*REPORT_HEAD) == REPORT_HEAD_WORDS, "a name a word");
_Static_assert(sizeof(REPORT_SOURCE) / sizeof(*REPORT_SOURCE) == REPORT_SOURCE_WORDS,
	       "a name a word");

static int feeder_open(Feeder *f)
{
	if (f->frames)
		return 1;
	PyErr_SetString(PyExc_RuntimeError, "_rt.Feeder is not open: __init__ did not run or failed");
	return 0;
}

/* A float32 buffer of exactly `want` items (0: any), copied into fresh memory. */
static float *copy_floats(PyObject *obj, uint64_t want, uint64_t *got, const char *name)
{
	Py_buffer view;
	if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
		return NULL;
	float *copy = NULL;
	uint64_t n = (uint64_t)view.len / sizeof(float);
	if (view.itemsize != (Py_ssize_t)sizeof(float) || !view.format || strcmp(view.format, "f") ||
	    (want && n != want) || n == 0) {
		PyErr_Format(PyExc_ValueError, "Feeder: %s must be %llu float32 items, got %zd bytes of '%s'",
			     name, (unsigned long long)want, view.len, view.format ? view.format : "B");
	} else if ((copy = PyMem_Malloc((size_t)n * sizeof(float)))) {
		memcpy(copy, view.buf, (size_t)n * sizeof(float));
		*got = n;
	} else {
		PyErr_NoMemory();
	}
	PyBuffer_Release(&view);
	return copy;
}

/* state: bytes of an mc_mixer (_dsp.mixer_state): the mixer's state and requests now */
static int load_state(Feeder *f, PyObject *state)
{
	char *data;
	Py_ssize_t len;
	if (PyBytes_AsStringAndSize(state, &data, &len) < 0)
		return -1;
	if ((size_t)len != sizeof(mc_mixer)) {
		PyErr_Format(PyExc_ValueError, "Feeder: state is %zd bytes, an mc_mixer is %zu (a _dsp "
			     "built from another _mixcore.h?)", len, sizeof(mc_mixer));
		return -1;
	}
	memcpy(&f->m, data, sizeof(mc_mixer));
	uint64_t p = f->m.period;
	if (p == 0 || p > 96000 || f->m.ramp == 0 || f->m.ramp > p) {
		PyErr_Format(PyExc_ValueError, "Feeder: period %llu, ramp %llu: need 0 < ramp <= period",
			     (unsigned long long)p, (unsigned long long)f->m.ramp);
		return -1;
	}
	for (int i = 0; i < MC_SOURCES; i++) {
		mc_source *s = &f->m.src[i];
		SourceRing *r = f->rings[i];
		s->samples = r->buf;
		s->capacity = r->capacity;
		s->read_pos = atomic_load(&r->rpos);
		s->write_pos = atomic_load(&r->wpos);
		if (r->capacity < p) {
			PyErr_Format(PyExc_ValueError, "Feeder: ring %d holds %llu samples, under a period",
				     i, (unsigned long long)r->capacity);
			return -1;
		}
	}
	uint64_t words[RQ_WORDS];
	feeder_pack_requests(&f->m, words);
	feeder_post_requests(f, words); /* the thread takes them (unchanged) at its first step */
	return 0;
}

static int take_rings(Feeder *f, PyObject *rings, PyObject *bits)
{
	if (!PyTuple_Check(rings) || PyTuple_GET_SIZE(rings) != MC_SOURCES || !PyTuple_Check(bits) ||
	    PyTuple_GET_SIZE(bits) != MC_SOURCES) {
		PyErr_Format(PyExc_TypeError, "Feeder: rings and expect_bits must be tuples of %d",
			     MC_SOURCES);
		return -1;
	}
	for (int i = 0; i < MC_SOURCES; i++) {
		PyObject *ring = PyTuple_GET_ITEM(rings, i);
		if (!PyObject_TypeCheck(ring, &SourceRingType) || !sourcering_open((SourceRing *)ring)) {
			PyErr_Format(PyExc_TypeError, "Feeder: rings[%d] is not an open SourceRing", i);
			return -1;
		}
		long bit = PyLong_AsLong(PyTuple_GET_ITEM(bits, i));
		if (bit < 0 || bit > 7) {
			if (!PyErr_Occurred())
				PyErr_Format(PyExc_ValueError, "Feeder: expect_bits[%d] = %ld is not 0 to 7",
					     i, bit);
			return -1;
		}
		f->expect_bit[i] = 1u << bit;
		f->rings[i] = (SourceRing *)Py_NewRef(ring);
	}
	return 0;
}

/* the device side: taps (frames, per) and the resampler's carried history, or None */
static int take_resampler(Feeder *f, PyObject *taps, PyObject *ext, long up, long down)
{
	if (taps == Py_None) {
		if (f->frames != f->m.period) {
			PyErr_Format(PyExc_ValueError, "Feeder: no resampler but %llu device frames for a "
				     "period of %llu", (unsigned long long)f->frames,
				     (unsigned long long)f->m.period);
			return -1;
		}
		return 0;
	}
	if (!(f->taps = copy_floats(taps, 0, &f->taps_n, "taps")) ||
	    !(f->ext = copy_floats(ext, 0, &f->ext_n, "ext")))
		return -1;
	f->up = up;
	f->down = down;
	const char *why = NULL;
	/* check the shapes once, on scratch, as the loop will use them */
	float *scratch_ext = PyMem_Malloc((size_t)f->ext_n * sizeof(float));
	if (!scratch_ext) {
		PyErr_NoMemory();
		return -1;
	}
	memcpy(scratch_ext, f->ext, (size_t)f->ext_n * sizeof(float));
	int rc = pp_resample(scratch_ext, f->ext_n, f->mix, f->m.period, f->taps, f->taps_n, f->device,
			     f->frames, up, down, &why);
	PyMem_Free(scratch_ext);
	if (rc < 0) {
		PyErr_Format(PyExc_ValueError, "Feeder: resampler: %s", why);
		return -1;
	}
	return 0;
}

static int alloc_buffers(Feeder *f, PyObject *shapes)
{
	uint64_t p = f->m.period, got;
	if (!PyTuple_Check(shapes) || PyTuple_GET_SIZE(shapes) != 4) {
		PyErr_SetString(PyExc_TypeError, "Feeder: shapes must be (unit, fade_out, fade_in, attack)");
		return -1;
	}
	f->shapes = PyMem_Calloc((size_t)(4 * p), sizeof(float));
	f->mix = PyMem_Calloc((size_t)p, sizeof(float));
	f->device = PyMem_Calloc((size_t)f->frames, sizeof(float));
	f->pcm = PyMem_Calloc((size_t)(f->frames * f->channels), sizeof(int16_t));
	f->reports = PyMem_Calloc((size_t)f->slots, sizeof(report_t));
	f->report_pcm = PyMem_Calloc((size_t)(f->slots * p), sizeof(int16_t));
	if (!f->shapes || !f->mix || !f->device || !f->pcm || !f->reports || !f->report_pcm) {
		PyErr_NoMemory();
		return -1;
	}
	static const char *names[] = {"unit", "fade_out", "fade_in", "attack"};
	for (Py_ssize_t i = 0; i < 4; i++) {
		float *copy = copy_floats(PyTuple_GET_ITEM(shapes, i), p, &got, names[i]);
		if (!copy)
			return -1;
		memcpy(f->shapes + (uint64_t)i * p, copy, (size_t)p * sizeof(float));
		PyMem_Free(copy);
	}
	f->m.unit = f->shapes;
	f->m.fade_out = f->shapes + p;
	f->m.fade_in = f->shapes + 2 * p;
	f->m.attack = f->shapes + 3 * p;
	return 0;
}

/* hold: None (no playout buffer), or (start_ms, min_ms, max_ms, calm_ms, sources), sources
 * a bit mask of the core sources (SOURCE_ORDER) whose starts are held: see hold_step in
 * _feedthread.c */
static int take_hold(Feeder *f, PyObject *hold)
{
	if (hold == Py_None)
		return 0;
	long long start, low, high, calm;
	unsigned sources;
	if (!PyArg_ParseTuple(hold, "LLLLI;Feeder: hold must be (start_ms, min_ms, max_ms, calm_ms, "
				    "sources)", &start, &low, &high, &calm, &sources))
		return -1;
	if (low < 0 || low > start || start > high || high > 2000 || calm < 1 ||
	    sources >= (1u << MC_SOURCES)) {
		PyErr_Format(PyExc_ValueError, "Feeder: hold (%lld, %lld, %lld, %lld, %u): need 0 <= "
			     "min <= start <= max <= 2000 ms, calm >= 1 ms, sources < %d", start, low,
			     high, calm, sources, 1 << MC_SOURCES);
		return -1;
	}
	for (int i = 0; i < MC_SOURCES; i++) {
		f->hold_on[i] = (sources >> i) & 1u;
		f->armed[i] = f->hold_on[i]; /* nothing has played yet: the first audio is a start */
	}
	f->hold_cap_factor = 2;
	f->hold_min_ns = low * 1000000LL;
	f->hold_max_ns = high * 1000000LL;
	f->hold_calm_ns = calm * 1000000LL;
	atomic_store(&f->hold_target_ns, start * 1000000LL);
	f->watched_ns = f->watch_at = 0;
	f->low_water_ns = INT64_MAX;
	return 0;
}

static int Feeder_init(Feeder *f, PyObject *args, PyObject *kwargs)
{
	static char *kw[] = {"output", "rings", "expect_bits", "state", "shapes", "taps", "ext",
			     "up", "down", "frames", "rate_hz", "lead_frames", "report_slots", "hold",
			     NULL};
	PyObject *output, *rings, *bits, *state, *shapes, *taps, *ext, *hold = Py_None;
	long up, down;
	long long frames, rate, lead, slots;
	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOSOOOllLLLL|O", kw, &output, &rings, &bits,
					 &state, &shapes, &taps, &ext, &up, &down, &frames, &rate,
					 &lead, &slots, &hold))
		return -1;
	if (f->output) {
		PyErr_SetString(PyExc_RuntimeError, "Feeder is already initialised");
		return -1;
	}
	if (!rt_output_is_open(output)) {
		PyErr_SetString(PyExc_TypeError, "Feeder: output must be an open _rt.Output");
		return -1;
	}
	if (frames < 16 || frames > 96000 || rate < 8000 || rate > 384000 || lead < 1 ||
	    slots < 2 || slots > 65536) {
		PyErr_Format(PyExc_ValueError, "Feeder: frames=%lld rate_hz=%lld lead_frames=%lld "
			     "report_slots=%lld out of range", frames, rate, lead, slots);
		return -1;
	}
	f->output = Py_NewRef(output);
	f->channels = rt_output_channels(output);
	f->rate = (uint64_t)rate;
	f->lead = (uint64_t)lead;
	f->slots = (uint64_t)slots;
	if (take_rings(f, rings, bits) < 0 || load_state(f, state) < 0 || take_hold(f, hold) < 0)
		return -1;
	f->frames = (uint64_t)frames;
	if (alloc_buffers(f, shapes) < 0 || take_resampler(f, taps, ext, up, down) < 0) {
		f->frames = 0;
		return -1;
	}
	f->period_ns = (long)(f->m.period * 1000000000ULL / 24000ULL);
	if (sem_init(&f->wake, 0, 0) != 0) {
		f->frames = 0;
		PyErr_SetFromErrno(PyExc_OSError);
		return -1;
	}
	f->sem_ready = 1;
	atomic_store(&f->policy, -1);
	return 0;
}

static PyObject *Feeder_start(Feeder *f, PyObject *unused)
{
	(void)unused;
	if (!feeder_open(f))
		return NULL;
	if (f->running)
		Py_RETURN_NONE;
	atomic_store_explicit(&f->stop, 0, memory_order_release);
	pthread_attr_t attr;
	struct sched_param param = {.sched_priority = sched_get_priority_min(SCHED_FIFO)};
	pthread_attr_init(&attr);
	pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&attr, SCHED_FIFO);
	pthread_attr_setschedparam(&attr, &param);
	int rc = pthread_create(&f->thread, &attr, feeder_run, f);
	pthread_attr_destroy(&attr);
	if (rc == EPERM) /* no CAP_SYS_NICE or rtprio: normal priority, quietly */
		rc = pthread_create(&f->thread, NULL, feeder_run, f);
	if (rc != 0) {
		errno = rc;
		return PyErr_SetFromErrno(PyExc_OSError);
	}
	f->running = 1;
	Py_RETURN_NONE;
}

static void stop_thread(Feeder *f)
{
	if (!f->running)
		return;
	atomic_store_explicit(&f->stop, 1, memory_order_release);
	sem_post(&f->wake);
	Py_BEGIN_ALLOW_THREADS
	pthread_join(f->thread, NULL);
	Py_END_ALLOW_THREADS
	f->running = 0;
}

/* stop() -> state bytes: join the thread; the mixer's state for Python to carry on with */
static PyObject *Feeder_stop(Feeder *f, PyObject *unused)
{
	(void)unused;
	if (!feeder_open(f))
		return NULL;
	stop_thread(f);
	mc_mixer copy = f->m;
	copy.unit = copy.fade_out = copy.fade_in = copy.attack = NULL;
	for (int i = 0; i < MC_SOURCES; i++)
		copy.src[i].samples = NULL;
	return PyBytes_FromStringAndSize((const char *)&copy, (Py_ssize_t)sizeof(copy));
}

/* request(state): publish the requests of an mc_mixer (_dsp.mixer_state); wakes the feeder */
static PyObject *Feeder_request(Feeder *f, PyObject *state)
{
	if (!feeder_open(f))
		return NULL;
	char *data;
	Py_ssize_t len;
	if (PyBytes_AsStringAndSize(state, &data, &len) < 0)
		return NULL;
	if ((size_t)len != sizeof(mc_mixer))
		return PyErr_Format(PyExc_ValueError, "request: %zd bytes, an mc_mixer is %zu", len,
				    sizeof(mc_mixer));
	mc_mixer m;
	memcpy(&m, data, sizeof(m));
	uint64_t words[RQ_WORDS];
	feeder_pack_requests(&m, words);
	feeder_post_requests(f, words);
	feeder_wake(f);
	Py_RETURN_NONE;
}

/* wake(): a ring was written; the feeder looks at once (an idle one sleeps up to 0.5 s) */
static PyObject *Feeder_wake(Feeder *f, PyObject *unused)
{
	(void)unused;
	if (!feeder_open(f))
		return NULL;
	feeder_wake(f);
	Py_RETURN_NONE;
}

/* peek(fields: float64[REPORT_WORDS], pcm: int16[period]) -> bool: copy the oldest
 * report; it stays in the log until pop() (so a cut's pending() still sees it) */
static PyObject *Feeder_peek(Feeder *f, PyObject *args)
{
	PyObject *a, *b;
	if (!feeder_open(f) || !PyArg_ParseTuple(args, "OO", &a, &b))
		return NULL;
	Py_buffer fields, pcm;
	if (PyObject_GetBuffer(a, &fields, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE | PyBUF_FORMAT) < 0)
		return NULL;
	if (PyObject_GetBuffer(b, &pcm, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE | PyBUF_FORMAT) < 0) {
		PyBuffer_Release(&fields);
		return NULL;
	}
	PyObject *result = NULL;
	if (!fields.format || strcmp(fields.format, "d") ||
	    fields.len != (Py_ssize_t)(REPORT_WORDS * sizeof(double)) || !pcm.format ||
	    strcmp(pcm.format, "h") || pcm.len != (Py_ssize_t)(f->m.period * sizeof(int16_t))) {
		PyErr_Format(PyExc_ValueError, "peek: fields must be %d float64, pcm %llu int16",
			     REPORT_WORDS, (unsigned long long)f->m.period);
		goto done;
	}
	uint64_t tail;
	if (feeder_reports_unpopped(f, &tail) == 0) {
		result = Py_NewRef(Py_False);
		goto done;
	}
	feeder_report_copy(f, tail, fields.buf, pcm.buf);
	result = Py_NewRef(Py_True);
done:
	PyBuffer_Release(&fields);
	PyBuffer_Release(&pcm);
	return result;
}

/* pop(): the oldest report was recorded: its slot is the feeder's again */
static PyObject *Feeder_pop(Feeder *f, PyObject *unused)
{
	(void)unused;
	if (!feeder_open(f))
		return NULL;
	if (feeder_report_pop(f) < 0)
		return PyErr_Format(PyExc_RuntimeError, "pop: the report log is empty");
	Py_RETURN_NONE;
}

/* pending() -> tuple of tuples of REPORT_WORDS floats: every report not yet popped,
 * oldest first (a cut answers from them and the history, drained or not) */
static PyObject *Feeder_pending(Feeder *f, PyObject *unused)
{
	(void)unused;
	if (!feeder_open(f))
		return NULL;
	uint64_t tail;
	uint64_t count = feeder_reports_unpopped(f, &tail);
	PyObject *all = PyTuple_New((Py_ssize_t)count);
	for (uint64_t k = 0; all && k < count; k++) {
		double words[REPORT_WORDS];
		feeder_report_copy(f, tail + k, words, NULL);
		PyObject *one = PyTuple_New(REPORT_WORDS);
		for (Py_ssize_t i = 0; one && i < REPORT_WORDS; i++) {
			PyObject *v = PyFloat_FromDouble(words[i]);
			if (!v)
				Py_CLEAR(one);
			else
				PyTuple_SET_ITEM(one, i, v);
		}
		if (!one)
			Py_CLEAR(all);
		else
			PyTuple_SET_ITEM(all, (Py_ssize_t)k, one);
	}
	return all;
}

static PyObject *Feeder_status(Feeder *f, PyObject *unused)
{
	(void)unused;
	if (!feeder_open(f))
		return NULL;
	return Py_BuildValue(
		"{s:K,s:K,s:K,s:K,s:I,s:i,s:i,s:i,s:d,s:K,s:K,s:d,s:K,s:K,s:d,s:K,s:K,s:K}",
		"periods",
		(unsigned long long)atomic_load(&f->periods), "full",
		(unsigned long long)atomic_load(&f->full), "overflow",
		(unsigned long long)atomic_load(&f->overflow), "reports_lost",
		(unsigned long long)atomic_load(&f->reports_lost), "acked",
		(unsigned)atomic_load(&f->acked), "idle", atomic_load(&f->idle_at) != 0, "policy",
		atomic_load(&f->policy), "running", f->running, "hold_target_ms",
		(double)atomic_load(&f->hold_target_ns) / 1e6, "holds",
		(unsigned long long)atomic_load(&f->holds), "holes",
		(unsigned long long)atomic_load(&f->holes), "hole_ms",
		(double)atomic_load(&f->hole_ns) / 1e6, "hold_grows",
		(unsigned long long)atomic_load(&f->grows), "hold_shrinks",
		(unsigned long long)atomic_load(&f->shrinks), "hold_ms_max",
		(double)atomic_load(&f->hold_ns_max) / 1e6, "released_full",
		(unsigned long long)atomic_load(&f->released_full), "released_end",
		(unsigned long long)atomic_load(&f->released_end), "released_late",
		(unsigned long long)atomic_load(&f->released_late));
}

/* realtime() -> True/False once the thread ran (SCHED_FIFO?), None before */
static PyObject *Feeder_realtime(Feeder *f, PyObject *unused)
{
	(void)unused;
	int policy = atomic_load(&f->policy);
	if (policy < 0)
		Py_RETURN_NONE;
	return PyBool_FromLong(policy == SCHED_FIFO || policy == SCHED_RR);
}

static PyObject *Feeder_idle(Feeder *f, PyObject *unused)
{
	(void)unused;
	if (!f->frames)
		Py_RETURN_FALSE;
	uint64_t at = atomic_load_explicit(&f->idle_at, memory_order_acquire);
	return PyBool_FromLong(at != 0 && at == atomic_load_explicit(&f->posted, memory_order_acquire) + 1);
}

static PyObject *Feeder_acked(Feeder *f, PyObject *unused)
{
	(void)unused;
	return PyLong_FromUnsignedLong(atomic_load_explicit(&f->acked, memory_order_relaxed));
}

static void Feeder_dealloc(Feeder *f)
{
	stop_thread(f);
	if (f->sem_ready)
		sem_destroy(&f->wake);
	PyMem_Free(f->shapes);
	PyMem_Free(f->mix);
	PyMem_Free(f->ext);
	PyMem_Free(f->taps);
	PyMem_Free(f->device);
	PyMem_Free(f->pcm);
	PyMem_Free(f->reports);
	PyMem_Free(f->report_pcm);
	for (int i = 0; i < MC_SOURCES; i++)
		Py_XDECREF(f->rings[i]);
	Py_XDECREF(f->output);
	Py_TYPE(f)->tp_free((PyObject *)f);
}

static PyMethodDef Feeder_methods[] = {
	{"start", (PyCFunction)Feeder_start, METH_NOARGS, "Start the feeder thread."},
	{"stop", (PyCFunction)Feeder_stop, METH_NOARGS, "Join the thread; the mixer state (bytes)."},
	{"request", (PyCFunction)Feeder_request, METH_O, "request(state): publish the requests."},
	{"wake", (PyCFunction)Feeder_wake, METH_NOARGS, "A ring was written: look now."},
	{"peek", (PyCFunction)Feeder_peek, METH_VARARGS, "peek(fields, pcm) -> bool: the oldest report."},
	{"pop", (PyCFunction)Feeder_pop, METH_NOARGS, "The oldest report was recorded: free it."},
	{"pending", (PyCFunction)Feeder_pending, METH_NOARGS, "Every report not yet popped."},
	{"status", (PyCFunction)Feeder_status, METH_NOARGS, "Counters (a dict)."},
	{"realtime", (PyCFunction)Feeder_realtime, METH_NOARGS, "Does the thread run SCHED_FIFO?"},
	{"idle", (PyCFunction)Feeder_idle, METH_NOARGS, "Nothing to mix, nothing pending."},
	{"acked", (PyCFunction)Feeder_acked, METH_NOARGS, "The last cut acknowledged."},
	{NULL, NULL, 0, NULL},
};

static PyTypeObject FeederType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "huxleyd.audio._rt.Feeder",
	.tp_basicsize = sizeof(Feeder),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "The mix, in a C thread, into the speaker Output's ring.",
	.tp_new = PyType_GenericNew,
	.tp_init = (initproc)Feeder_init,
	.tp_dealloc = (destructor)Feeder_dealloc,
	.tp_methods = Feeder_methods,
};

static PyObject *names_tuple(const char **names, Py_ssize_t n)
{
	PyObject *t = PyTuple_New(n);
	for (Py_ssize_t i = 0; t && i < n; i++) {
		PyObject *s = PyUnicode_FromString(names[i]);
		if (!s) {
			Py_CLEAR(t);
			break;
		}
		PyTuple_SET_ITEM(t, i, s);
	}
	return t;
}

/* _mixer_holding(state, bits) -> (mask, idle): tests only, the feeder's idle test on an
 * mc_mixer (_dsp.mixer_state), bits[i] the expect() bit of core source i */
PyObject *feeder_mixer_holding(PyObject *self, PyObject *args)
{
	(void)self;
	Py_buffer state;
	unsigned bits[MC_SOURCES];
	if (!PyArg_ParseTuple(args, "y*(IIII)", &state, &bits[0], &bits[1], &bits[2], &bits[3]))
		return NULL;
	if ((size_t)state.len != sizeof(mc_mixer)) {
		PyBuffer_Release(&state);
		return PyErr_Format(PyExc_ValueError, "_mixer_holding: %zd bytes, an mc_mixer is %zu",
				    state.len, sizeof(mc_mixer));
	}
	mc_mixer m;
	memcpy(&m, state.buf, sizeof(m));
	PyBuffer_Release(&state);
	int idle;
	unsigned mask = feeder_holding_of(&m, bits, &idle);
	return Py_BuildValue("(IO)", mask, idle ? Py_True : Py_False);
}

/* See _feeder.h. */
PyObject *feeder_hold_shrunk_py(PyObject *self, PyObject *args)
{
	(void)self;
	double target, floor;
	PyObject *low;
	if (!PyArg_ParseTuple(args, "dOd", &target, &low, &floor))
		return NULL;
	int64_t low_ns = INT64_MAX;
	if (low != Py_None) {
		double ms = PyFloat_AsDouble(low);
		if (ms == -1.0 && PyErr_Occurred())
			return NULL;
		low_ns = (int64_t)(ms * 1e6);
	}
	int64_t ns = feeder_hold_shrunk((int64_t)(target * 1e6), low_ns, (int64_t)(floor * 1e6));
	return PyFloat_FromDouble((double)ns / 1e6);
}

int feeder_add_types(PyObject *module)
{
	if (PyType_Ready(&SourceRingType) < 0 || PyType_Ready(&FeederType) < 0 ||
	    PyModule_AddType(module, &SourceRingType) < 0 || PyModule_AddType(module, &FeederType) < 0)
		return -1;
	PyObject *head = names_tuple(REPORT_HEAD, REPORT_HEAD_WORDS);
	PyObject *src = names_tuple(REPORT_SOURCE, REPORT_SOURCE_WORDS);
	int bad = !head || !src || PyModule_AddObjectRef(module, "REPORT_HEAD", head) < 0 ||
		  PyModule_AddObjectRef(module, "REPORT_SOURCE", src) < 0;
	Py_XDECREF(head);
	Py_XDECREF(src);
	return bad ? -1 : 0;
}
