/* _feeder: SourceRing and the C feeder thread. See _feeder.h for the picture.
 *
 * The feeder's period loop (feeder_run) is the real-time contract: no allocation, no
 * lock, no Python, no logging; it waits only in sem_clockwait on CLOCK_MONOTONIC
 * (a request or a ring write posts the semaphore; sem_post never blocks the poster).
 */
#include "_rt.h" /* first: Python.h before the standard headers */
#include "_feeder.h"
#include "_mixcore.h"
#include "_polyphase.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

/* ---- SourceRing ---------------------------------------------------------------------- */

typedef struct {
	PyObject_HEAD
	int16_t *buf;
	uint64_t capacity; /* samples; 0 until __init__ succeeded (every method checks) */
	Py_ssize_t shape[1], strides[1];
	/* wpos: written by the producer (Python, GIL held) with a release store after the
	 *   samples are copied in; the consumer's acquire load pairs, so it never mixes a
	 *   slot before its data.
	 * rpos: written by the consumer (the feeder thread, or the Python mixer while no
	 *   feeder runs: never both, the engine hands over at device open and close) with
	 *   a release store after the samples were read; the producer's acquire load
	 *   pairs, so it never overwrites a slot still being read. */
	_Atomic uint64_t wpos;
	_Atomic uint64_t rpos;
} SourceRing;

static int SourceRing_init(SourceRing *r, PyObject *args, PyObject *kwargs)
{
	static char *kw[] = {"capacity", NULL};
	long long capacity;
	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "L", kw, &capacity))
		return -1;
	if (r->buf) {
		PyErr_SetString(PyExc_RuntimeError, "SourceRing is already initialised");
		return -1;
	}
	if (capacity < 1 || capacity > (1LL << 31)) {
		PyErr_Format(PyExc_ValueError, "SourceRing: capacity %lld is not 1 to 2**31 samples",
			     capacity);
		return -1;
	}
	r->buf = PyMem_Calloc((size_t)capacity, sizeof(int16_t));
	if (!r->buf) {
		PyErr_NoMemory();
		return -1;
	}
	r->shape[0] = (Py_ssize_t)capacity;
	r->strides[0] = (Py_ssize_t)sizeof(int16_t);
	r->capacity = (uint64_t)capacity;
	return 0;
}

static void SourceRing_dealloc(SourceRing *r)
{
	PyMem_Free(r->buf);
	Py_TYPE(r)->tp_free((PyObject *)r);
}

static int ring_open(SourceRing *r)
{
	if (r->capacity)
		return 1;
	PyErr_SetString(PyExc_RuntimeError, "SourceRing is not open: __init__ did not run or failed");
	return 0;
}

/* The samples as a writable 1-D int16 buffer (numpy.frombuffer): the producer's side. */
static int SourceRing_getbuffer(SourceRing *r, Py_buffer *view, int flags)
{
	if (!ring_open(r)) {
		view->obj = NULL;
		return -1;
	}
	view->obj = Py_NewRef((PyObject *)r);
	view->buf = r->buf;
	view->len = (Py_ssize_t)(r->capacity * sizeof(int16_t));
	view->readonly = 0;
	view->itemsize = (Py_ssize_t)sizeof(int16_t);
	view->format = (flags & PyBUF_FORMAT) ? "h" : NULL;
	view->ndim = 1;
	view->shape = (flags & PyBUF_ND) ? r->shape : NULL;
	view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? r->strides : NULL;
	view->suboffsets = NULL;
	view->internal = NULL;
	return 0;
}

static PyBufferProcs SourceRing_buffer = {.bf_getbuffer = (getbufferproc)SourceRing_getbuffer};

static PyObject *SourceRing_get_capacity(SourceRing *r, void *closure)
{
	(void)closure;
	return PyLong_FromUnsignedLongLong(r->capacity);
}

static PyObject *SourceRing_get_wpos(SourceRing *r, void *closure)
{
	(void)closure;
	return PyLong_FromUnsignedLongLong(atomic_load_explicit(&r->wpos, memory_order_acquire));
}

static PyObject *SourceRing_get_rpos(SourceRing *r, void *closure)
{
	(void)closure;
	return PyLong_FromUnsignedLongLong(atomic_load_explicit(&r->rpos, memory_order_acquire));
}

static int position_arg(SourceRing *r, PyObject *value, const char *name, uint64_t *out)
{
	if (!ring_open(r))
		return -1;
	if (!value) {
		PyErr_Format(PyExc_AttributeError, "SourceRing.%s cannot be deleted", name);
		return -1;
	}
	unsigned long long v = PyLong_AsUnsignedLongLong(value);
	if (v == (unsigned long long)-1 && PyErr_Occurred()) {
		PyErr_Format(PyExc_ValueError, "SourceRing.%s must be a whole number >= 0", name);
		return -1;
	}
	*out = (uint64_t)v;
	return 0;
}

/* the producer publishes: never behind the reader, never more than a ring ahead of it */
static int SourceRing_set_wpos(SourceRing *r, PyObject *value, void *closure)
{
	(void)closure;
	uint64_t w;
	if (position_arg(r, value, "write_pos", &w) < 0)
		return -1;
	uint64_t rp = atomic_load_explicit(&r->rpos, memory_order_acquire);
	if (w < rp || w - rp > r->capacity) {
		PyErr_Format(PyExc_ValueError,
			     "SourceRing.write_pos = %llu: must be read_pos %llu to read_pos + capacity %llu",
			     (unsigned long long)w, (unsigned long long)rp, (unsigned long long)r->capacity);
		return -1;
	}
	atomic_store_explicit(&r->wpos, w, memory_order_release);
	return 0;
}

/* the consumer publishes (the Python mixer while no feeder runs): never past the writer */
static int SourceRing_set_rpos(SourceRing *r, PyObject *value, void *closure)
{
	(void)closure;
	uint64_t rp;
	if (position_arg(r, value, "read_pos", &rp) < 0)
		return -1;
	uint64_t w = atomic_load_explicit(&r->wpos, memory_order_acquire);
	if (rp > w) {
		PyErr_Format(PyExc_ValueError, "SourceRing.read_pos = %llu: past write_pos %llu",
			     (unsigned long long)rp, (unsigned long long)w);
		return -1;
	}
	atomic_store_explicit(&r->rpos, rp, memory_order_release);
	return 0;
}

static PyGetSetDef SourceRing_getset[] = {
	{"capacity", (getter)SourceRing_get_capacity, NULL, "Samples the ring holds.", NULL},
	{"write_pos", (getter)SourceRing_get_wpos, (setter)SourceRing_set_wpos,
	 "Samples ever written (producer stores, release).", NULL},
	{"read_pos", (getter)SourceRing_get_rpos, (setter)SourceRing_set_rpos,
	 "Samples ever consumed (consumer stores, release).", NULL},
	{NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject SourceRingType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "huxleyd.audio._rt.SourceRing",
	.tp_basicsize = sizeof(SourceRing),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "One source's int16 ring, owned in C: Python writes, the C feeder reads.",
	.tp_new = PyType_GenericNew,
	.tp_init = (initproc)SourceRing_init,
	.tp_dealloc = (destructor)SourceRing_dealloc,
	.tp_as_buffer = &SourceRing_buffer,
	.tp_getset = SourceRing_getset,
};

/* ---- requests: a seqlock of 64-bit words ------------------------------------------------ */

enum { RQ_GAIN, RQ_DUCKED, RQ_PAUSED, RQ_FLUSH_SEQ, RQ_FLUSH_TO, RQ_PER_SOURCE };
enum { RQ_MASTER = RQ_PER_SOURCE * MC_SOURCES, RQ_GATE_SEQ, RQ_GATE_END, RQ_GATE_POS, RQ_WORDS };

static uint64_t bits_of(double d)
{
	uint64_t w;
	memcpy(&w, &d, sizeof(w));
	return w;
}

static double double_of(uint64_t w)
{
	double d;
	memcpy(&d, &w, sizeof(d));
	return d;
}

/* The request fields of a mixer struct as words, and back (the one list of them). */
static void pack_requests(const mc_mixer *m, uint64_t *w)
{
	for (int i = 0; i < MC_SOURCES; i++) {
		const mc_source *s = &m->src[i];
		uint64_t *at = w + i * RQ_PER_SOURCE;
		at[RQ_GAIN] = bits_of(s->req_gain);
		at[RQ_DUCKED] = (uint64_t)(s->req_ducked != 0);
		at[RQ_PAUSED] = (uint64_t)(s->req_paused != 0);
		at[RQ_FLUSH_SEQ] = s->req_flush_seq;
		at[RQ_FLUSH_TO] = s->req_flush_to;
	}
	w[RQ_MASTER] = bits_of(m->req_master);
	w[RQ_GATE_SEQ] = m->req_gate_seq;
	w[RQ_GATE_END] = m->req_gate_earcon_end;
	w[RQ_GATE_POS] = m->req_gate_speech_pos;
}

static void unpack_requests(const uint64_t *w, mc_mixer *m)
{
	for (int i = 0; i < MC_SOURCES; i++) {
		mc_source *s = &m->src[i];
		const uint64_t *at = w + i * RQ_PER_SOURCE;
		s->req_gain = double_of(at[RQ_GAIN]);
		s->req_ducked = at[RQ_DUCKED] != 0;
		s->req_paused = at[RQ_PAUSED] != 0;
		s->req_flush_seq = at[RQ_FLUSH_SEQ];
		s->req_flush_to = at[RQ_FLUSH_TO];
	}
	m->req_master = double_of(w[RQ_MASTER]);
	m->req_gate_seq = w[RQ_GATE_SEQ];
	m->req_gate_earcon_end = w[RQ_GATE_END];
	m->req_gate_speech_pos = w[RQ_GATE_POS];
}

/* ---- the report log ------------------------------------------------------------------- */

/* One mixed period, as Python's playout clock, meters and echo canceller need it. The
 * layout Python reads (peek(), pending()) is REPORT_HEAD then each REPORT_SOURCE field
 * for the four sources in SOURCE_ORDER: the module exports both tuples, the only list
 * of them. */
typedef struct {
	double head[5]; /* dev_start (-1: not written), limiter_active, peak, power, holding */
	double src[6][MC_SOURCES];
} report_t;
static const char *REPORT_HEAD[] = {"dev_start", "limiter_active", "peak", "power", "holding"};
static const char *REPORT_SOURCE[] = {"pull_start", "pull_offset", "pull_count",
				      "skip_from",  "skip_to",     "dry_count"};
#define REPORT_WORDS (5 + 6 * MC_SOURCES)
_Static_assert(sizeof(report_t) == REPORT_WORDS * sizeof(double), "a report is its words");

/* ---- the Feeder ---------------------------------------------------------------------- */

typedef struct {
	PyObject_HEAD
	uint64_t frames; /* device frames per period; 0 until __init__ succeeded */
	PyObject *output;
	SourceRing *rings[MC_SOURCES];
	unsigned expect_bit[MC_SOURCES]; /* the Output's expect() bit of each core source */
	mc_mixer m;                      /* the feeder thread's alone while it runs */
	float *shapes, *mix, *ext, *taps, *device;
	uint64_t ext_n, taps_n;
	long up, down; /* 0: the device runs at the mixer's rate (a copy) */
	int16_t *pcm;
	uint64_t channels, lead, rate;
	long period_ns;
	int idle_streak; /* periods mixed in a row with nothing to mix (the feeder's) */
	/* Requests. Writers hold the GIL (one at a time): req_seq odd (relaxed store, then
	 * a release fence), the words (relaxed), req_seq even (release). The feeder loads
	 * req_seq (acquire), the words (relaxed), an acquire fence, req_seq again (relaxed),
	 * and keeps its last snapshot when the two differ or are odd after a few tries:
	 * the request is then taken one period later, never torn and never waited for. */
	_Atomic uint32_t req_seq;
	_Atomic uint64_t req_words[RQ_WORDS];
	uint32_t req_taken; /* the feeder's: the req_seq of its snapshot */
	/* Reports. The feeder fills slot head % slots, then stores head + 1 (release);
	 * peek() and pending() load head (acquire) before reading slots [tail, head);
	 * pop() stores tail + 1 (release) once the oldest was recorded; the feeder's
	 * acquire load of tail pairs, so it never overwrites a slot still to be read.
	 * tail is written only with the GIL held (pop), so peek, pending and pop never
	 * interleave: a report is in the log until Python recorded it, and a cut's
	 * pending() sees every report not yet in the playout clock's history. A full
	 * log: the period plays and is not logged (reports_lost, relaxed: a counter). */
	report_t *reports;
	int16_t *report_pcm; /* slots * period mixer samples: the mix, for the echo canceller */
	uint64_t slots;
	_Atomic uint64_t report_head, report_tail, reports_lost;
	/* Feeder -> Python, relaxed counters or flags (no data hangs on them): acked (the
	 * last cut acknowledged), periods mixed, full (times a period waited because the
	 * Output ring had no room for all of it: nothing is mixed that cannot be written),
	 * overflow (frames a write refused anyway: a bug, counted), policy (the thread's
	 * scheduling policy, -1 before it ran).
	 * posted: bumped (release) by every request() and wake(), before the sem_post.
	 * idle_at: the feeder's (release): posted + 1 as it loaded it (acquire) at the start
	 *   of a step that found nothing to do, 0 after a step that mixed. Python's idle()
	 *   is idle_at == posted + 1: a request or ring write since that step (which the
	 *   feeder has not seen yet) makes it false, so the audio thread never sleeps on
	 *   a stale "idle" while the feeder is about to play. */
	_Atomic uint32_t acked;
	_Atomic uint64_t posted, idle_at;
	_Atomic uint64_t periods, full, overflow;
	_Atomic int policy;
	/* Python -> feeder: stop (release store, then sem_post; the feeder's acquire load). */
	_Atomic int stop;
	sem_t wake;
	int sem_ready;
	pthread_t thread;
	int running; /* the thread was started and not yet joined (GIL held: Python's) */
} Feeder;

/* Take the newest consistent requests into the mixer struct (see req_seq). */
static void take_requests(Feeder *f)
{
	uint64_t words[RQ_WORDS];
	for (int tries = 0; tries < 8; tries++) {
		uint32_t before = atomic_load_explicit(&f->req_seq, memory_order_acquire);
		if (before & 1u)
			continue;
		if (before == f->req_taken)
			return; /* nothing new */
		for (int i = 0; i < RQ_WORDS; i++)
			words[i] = atomic_load_explicit(&f->req_words[i], memory_order_relaxed);
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&f->req_seq, memory_order_relaxed) != before)
			continue;
		unpack_requests(words, &f->m);
		f->req_taken = before;
		return;
	}
}

/* Each ring's write position, as its producer published it (acquire: its samples too). */
static void take_positions(Feeder *f)
{
	for (int i = 0; i < MC_SOURCES; i++) {
		mc_source *s = &f->m.src[i];
		s->write_pos = atomic_load_explicit(&f->rings[i]->wpos, memory_order_acquire);
	}
}

static void publish_positions(Feeder *f)
{
	for (int i = 0; i < MC_SOURCES; i++)
		atomic_store_explicit(&f->rings[i]->rpos, f->m.src[i].read_pos, memory_order_release);
}

/* SourceChannel.idle: nothing to play and nothing moving for source s */
static int source_idle(const mc_mixer *m, const mc_source *s)
{
	if (s->req_flush_seq != s->flush_seq || (s->req_paused != 0) != (s->paused != 0))
		return 0;
	if (s->gain != s->req_gain || s->duck_db != (s->req_ducked ? m->depth_db : 0.0))
		return 0;
	return s->paused || s->write_pos == s->read_pos;
}

/* Mixer.holding (as the Output's expect bits, bits[i] for core source i) and Mixer.idle
 * (*idle). tests/audio/test_feeder.py compares both with the Python methods. */
static unsigned holding_of(const mc_mixer *m, const unsigned *bits, int *idle)
{
	unsigned mask = 0;
	int any = 0;
	for (int i = 0; i < MC_SOURCES; i++)
		if (!source_idle(m, &m->src[i])) {
			mask |= bits[i];
			any = 1;
		}
	*idle = !any && m->master == m->req_master && m->limiter_gain == 1.0 && !m->gate_active &&
		m->req_gate_seq == m->gate_seq;
	return mask;
}

static unsigned holding(const Feeder *f, int *idle)
{
	return holding_of(&f->m, f->expect_bit, idle);
}

/* Mixer.skip_idle: a silent period's bookkeeping without the arithmetic */
static void skip_idle(mc_mixer *m)
{
	for (int i = 0; i < MC_SOURCES; i++) {
		mc_source *s = &m->src[i];
		s->pull_start = s->read_pos;
		s->pull_offset = s->pull_count = 0;
		s->skip_from = s->skip_to = 0;
		if (!s->paused) {
			if (s->flowing)
				s->dry_count++;
			s->flowing = 0;
		}
	}
}

/* The period's mix (24 kHz) at the device rate, metered, as int16 on every channel. */
static void to_device(Feeder *f, double *peak, double *power)
{
	uint64_t n = f->frames;
	if (f->up) {
		const char *why = NULL; /* the shapes were checked at __init__: cannot fail */
		pp_resample(f->ext, f->ext_n, f->mix, f->m.period, f->taps, f->taps_n, f->device, n,
			    f->up, f->down, &why);
	} else {
		memcpy(f->device, f->mix, n * sizeof(float));
	}
	float high = f->device[0], low = f->device[0];
	double sum = 0.0;
	for (uint64_t i = 0; i < n; i++) {
		float v = f->device[i];
		high = v > high ? v : high;
		low = v < low ? v : low;
		sum += (double)v * (double)v;
		int16_t s = pp_to_int16(v);
		for (uint64_t c = 0; c < f->channels; c++)
			f->pcm[i * f->channels + c] = s;
	}
	*peak = (double)high > -(double)low ? (double)high : -(double)low;
	*power = sum / (double)n;
}

static void log_report(Feeder *f, int64_t dev_start, double peak, double power, unsigned mask)
{
	uint64_t head = atomic_load_explicit(&f->report_head, memory_order_relaxed);
	uint64_t tail = atomic_load_explicit(&f->report_tail, memory_order_acquire);
	if (head - tail >= f->slots) {
		atomic_fetch_add_explicit(&f->reports_lost, 1, memory_order_relaxed);
		return;
	}
	uint64_t slot = head % f->slots;
	report_t *r = &f->reports[slot];
	r->head[0] = (double)dev_start;
	r->head[1] = (double)f->m.limiter_active;
	r->head[2] = peak;
	r->head[3] = power;
	r->head[4] = (double)mask;
	for (int i = 0; i < MC_SOURCES; i++) {
		const mc_source *s = &f->m.src[i];
		const uint64_t v[6] = {s->pull_start, s->pull_offset, s->pull_count,
				       s->skip_from,  s->skip_to,     s->dry_count};
		for (int k = 0; k < 6; k++)
			r->src[k][i] = (double)v[k];
	}
	int16_t *pcm = f->report_pcm + slot * f->m.period;
	for (uint64_t i = 0; i < f->m.period; i++)
		pcm[i] = pp_to_int16(f->mix[i]);
	atomic_store_explicit(&f->report_head, head + 1, memory_order_release);
}

/* One period: mix, convert, report, then write after what the callback has queued.
 * The report is logged before the write: a cut (asyncio) that finds these frames in
 * the speaker's ring (its acquire load of the write position) then finds their report
 * in the log too (the head's release store comes first in this thread), drained or
 * not, and answers from this period, not from an older one. The caller checked the
 * ring has room for the whole period, and only the callback runs beside us (it frees
 * slots), so the write takes every frame the report claims. */
static void feed_period(Feeder *f)
{
	mc_mix_period(&f->m, f->mix);
	publish_positions(f);
	double peak, power;
	to_device(f, &peak, &power);
	uint64_t start = rt_output_written(f->output);
	int idle;
	unsigned mask = holding(f, &idle);
	log_report(f, (int64_t)start, peak, power, mask);
	uint64_t wrote = rt_output_write(f->output, f->pcm, f->frames);
	if (wrote < f->frames) /* cannot happen (room checked): counted, never hidden */
		atomic_fetch_add_explicit(&f->overflow, f->frames - wrote, memory_order_relaxed);
	atomic_fetch_add_explicit(&f->periods, 1, memory_order_relaxed);
}

static void wait_ns(Feeder *f, long ns)
{
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until); /* not the wall clock: NTP steps it */
	until.tv_nsec += ns;
	while (until.tv_nsec >= 1000000000L) {
		until.tv_nsec -= 1000000000L;
		until.tv_sec++;
	}
	while (sem_clockwait(&f->wake, CLOCK_MONOTONIC, &until) != 0 && errno == EINTR)
		;
}

/* How long the callback takes to play `frames` (ns): at least 0.5 ms, at most a period. */
static long wait_for_frames(const Feeder *f, uint64_t frames)
{
	long ns = (long)(frames * 1000000000ULL / f->rate);
	return ns < f->period_ns ? (ns > 500000L ? ns : 500000L) : f->period_ns;
}

/* One pass of the loop: how long to wait before the next (ns). */
static long feed_step(Feeder *f)
{
	uint64_t posted = atomic_load_explicit(&f->posted, memory_order_acquire);
	uint32_t cut = rt_output_cut_req(f->output); /* before the requests: its flush with it */
	take_requests(f);
	take_positions(f);
	int cutting = cut != atomic_load_explicit(&f->acked, memory_order_relaxed);
	int idle;
	unsigned mask = holding(f, &idle);
	/* idle after a silent period was mixed: the resampler's history is zeros too */
	if (idle && f->idle_streak > 0 && !cutting) {
		skip_idle(&f->m);
		rt_output_expect(f->output, 0);
		atomic_store_explicit(&f->idle_at, posted + 1, memory_order_release);
		return 500000000L; /* a request or a ring write posts `wake` */
	}
	atomic_store_explicit(&f->idle_at, 0, memory_order_release);
	uint64_t queued = rt_output_queued(f->output);
	if (queued >= f->lead && !cutting) {
		rt_output_expect(f->output, mask);
		return wait_for_frames(f, queued - f->lead + 1);
	}
	uint64_t room = rt_output_room(f->output);
	if (room < f->frames) { /* a lead near the ring's size: never mix what cannot be written */
		atomic_fetch_add_explicit(&f->full, 1, memory_order_relaxed);
		rt_output_expect(f->output, mask);
		return wait_for_frames(f, f->frames - room);
	}
	feed_period(f);
	f->idle_streak = idle ? f->idle_streak + 1 : 0;
	if (cutting) { /* that mix took the cut's flush in: the callback plays from here */
		rt_output_resume(f->output, cut, rt_output_written(f->output));
		atomic_store_explicit(&f->acked, cut, memory_order_relaxed);
	}
	mask = holding(f, &idle);
	rt_output_expect(f->output, mask);
	return 0; /* at once: up to the lead */
}

static void *feeder_run(void *arg)
{
	Feeder *f = arg;
	pthread_setname_np(pthread_self(), "huxleyd-feeder"); /* as ps, top and the docs name it */
	int policy;
	struct sched_param param;
	atomic_store(&f->policy, pthread_getschedparam(pthread_self(), &policy, &param) == 0 ? policy : 0);
	while (!atomic_load_explicit(&f->stop, memory_order_acquire)) {
		long ns = feed_step(f);
		if (ns > 0)
			wait_ns(f, ns);
	}
	return NULL;
}

/* ---- the Feeder's Python side ----------------------------------------------------------- */

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
	pack_requests(&f->m, words);
	for (int i = 0; i < RQ_WORDS; i++)
		atomic_store(&f->req_words[i], words[i]);
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
		if (!PyObject_TypeCheck(ring, &SourceRingType) || !ring_open((SourceRing *)ring)) {
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

static int Feeder_init(Feeder *f, PyObject *args, PyObject *kwargs)
{
	static char *kw[] = {"output", "rings", "expect_bits", "state", "shapes", "taps", "ext",
			     "up", "down", "frames", "rate_hz", "lead_frames", "report_slots", NULL};
	PyObject *output, *rings, *bits, *state, *shapes, *taps, *ext;
	long up, down;
	long long frames, rate, lead, slots;
	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOSOOOllLLLL", kw, &output, &rings, &bits,
					 &state, &shapes, &taps, &ext, &up, &down, &frames, &rate,
					 &lead, &slots))
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
	if (take_rings(f, rings, bits) < 0 || load_state(f, state) < 0)
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
	pack_requests(&m, words);
	uint32_t seq = atomic_load_explicit(&f->req_seq, memory_order_relaxed);
	atomic_store_explicit(&f->req_seq, seq + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	for (int i = 0; i < RQ_WORDS; i++)
		atomic_store_explicit(&f->req_words[i], words[i], memory_order_relaxed);
	atomic_store_explicit(&f->req_seq, seq + 2, memory_order_release);
	atomic_fetch_add_explicit(&f->posted, 1, memory_order_release);
	sem_post(&f->wake);
	Py_RETURN_NONE;
}

/* wake(): a ring was written; the feeder looks at once (an idle one sleeps up to 0.5 s) */
static PyObject *Feeder_wake(Feeder *f, PyObject *unused)
{
	(void)unused;
	if (!feeder_open(f))
		return NULL;
	atomic_fetch_add_explicit(&f->posted, 1, memory_order_release);
	sem_post(&f->wake);
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
	uint64_t tail = atomic_load_explicit(&f->report_tail, memory_order_relaxed);
	uint64_t head = atomic_load_explicit(&f->report_head, memory_order_acquire);
	if (tail == head) {
		result = Py_NewRef(Py_False);
		goto done;
	}
	uint64_t slot = tail % f->slots;
	memcpy(fields.buf, &f->reports[slot], sizeof(report_t));
	memcpy(pcm.buf, f->report_pcm + slot * f->m.period, (size_t)f->m.period * sizeof(int16_t));
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
	uint64_t tail = atomic_load_explicit(&f->report_tail, memory_order_relaxed);
	if (tail == atomic_load_explicit(&f->report_head, memory_order_acquire))
		return PyErr_Format(PyExc_RuntimeError, "pop: the report log is empty");
	atomic_store_explicit(&f->report_tail, tail + 1, memory_order_release);
	Py_RETURN_NONE;
}

/* pending() -> tuple of tuples of REPORT_WORDS floats: every report not yet popped,
 * oldest first (a cut answers from them and the history, drained or not) */
static PyObject *Feeder_pending(Feeder *f, PyObject *unused)
{
	(void)unused;
	if (!feeder_open(f))
		return NULL;
	uint64_t tail = atomic_load_explicit(&f->report_tail, memory_order_relaxed);
	uint64_t head = atomic_load_explicit(&f->report_head, memory_order_acquire);
	PyObject *all = PyTuple_New((Py_ssize_t)(head - tail));
	for (uint64_t k = 0; all && k < head - tail; k++) {
		double words[REPORT_WORDS];
		memcpy(words, &f->reports[(tail + k) % f->slots], sizeof(words));
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
	return Py_BuildValue("{s:K,s:K,s:K,s:K,s:I,s:i,s:i,s:i}", "periods",
			     (unsigned long long)atomic_load(&f->periods), "full",
			     (unsigned long long)atomic_load(&f->full), "overflow",
			     (unsigned long long)atomic_load(&f->overflow), "reports_lost",
			     (unsigned long long)atomic_load(&f->reports_lost), "acked",
			     (unsigned)atomic_load(&f->acked), "idle", atomic_load(&f->idle_at) != 0, "policy",
			     atomic_load(&f->policy), "running", f->running);
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
	unsigned mask = holding_of(&m, bits, &idle);
	return Py_BuildValue("(IO)", mask, idle ? Py_True : Py_False);
}

int feeder_add_types(PyObject *module)
{
	if (PyType_Ready(&SourceRingType) < 0 || PyType_Ready(&FeederType) < 0 ||
	    PyModule_AddType(module, &SourceRingType) < 0 || PyModule_AddType(module, &FeederType) < 0)
		return -1;
	PyObject *head = names_tuple(REPORT_HEAD, 5);
	PyObject *src = names_tuple(REPORT_SOURCE, 6);
	int bad = !head || !src || PyModule_AddObjectRef(module, "REPORT_HEAD", head) < 0 ||
		  PyModule_AddObjectRef(module, "REPORT_SOURCE", src) < 0;
	Py_XDECREF(head);
	Py_XDECREF(src);
	return bad ? -1 : 0;
}
