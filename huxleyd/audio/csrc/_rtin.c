/* _rtin: the mic side of huxleyd.audio._rt (one extension, two files; see _rt.h).
 *
 * A PortAudio callback capture stream copies each short period into a lock-free ring;
 * the audio thread's read() takes a whole engine period from it. A period already
 * there is copied with the GIL held; only a wait for the next one releases it. A
 * Python thread late by up to the ring's length loses nothing (the engine drains
 * every whole period queued); later than that, the oldest frames are overwritten
 * and counted, never an xrun at the card. After an idle sleep, discard() skips to
 * the newest frames without counting them (nobody listened).
 *
 * The ring is a single-producer (the callback) / single-consumer (the reader) one.
 * The reader cannot stop the callback, so a reader nearly a ring behind may copy
 * slots the callback is rewriting: the callback announces how far it is about to
 * write (`wend`) before it writes, and the reader checks `wend` after its copy, like
 * a seqlock reader checks the sequence: a copy the writer reached is thrown away
 * and the frames it lost are counted, never handed on torn.
 *
 * Each callback also stamps when its first frame was captured (`stamps`): PortAudio's
 * inputBufferAdcTime, moved onto CLOCK_MONOTONIC by its distance from the callback's
 * currentTime (both on PortAudio's time base, which for ALSA is the status time stamp,
 * not necessarily monotonic). read() hands the stamp of the period it took on
 * (captured_ago()): when the card captured it, not when Python got to read it, which
 * is what an echo canceller aligning the mic with the speaker needs. Where the host
 * API gives no ADC time (0), the stamp is the callback's own time minus its frames,
 * and counted (stamp_counts()).
 *
 * The reader waits on CLOCK_MONOTONIC (sem_clockwait): a Pi has no RTC and NTP
 * steps the wall clock after boot; a wall-clock deadline would end a wait early
 * (a "lost" device, reopened) or stretch it.
 */
#include "_rt.h"
#include <errno.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* One callback's capture time. seq: odd while the callback rewrites the slot (release),
 * even after (release); the reader loads it (acquire) before and after its copy and
 * takes the copy only when both are the same even value, like heard_now() in _rtout.c. */
typedef struct {
	_Atomic uint32_t seq;
	uint64_t pos; /* ring position of the callback's first frame */
	double adc;   /* when that frame was captured, CLOCK_MONOTONIC seconds */
} mic_stamp_t;

typedef struct {
	PyObject_HEAD
	PaStream *stream;
	int pa_ready;
	int sem_ready; /* `ready` initialised: destroyed in dealloc, never while a read may wait */
	uint64_t channels; /* 0 until __init__ succeeded: every reading method checks */
	int16_t *ring;
	uint64_t mask;
	/* Written by the callback only. wend: relaxed store, then a release fence, before
	 * the slots are written; the reader's acquire fence after its copy pairs with it.
	 * wpos: release store after the slots are written; pairs with the reader's
	 * acquire load before it copies. */
	_Atomic uint64_t wend;
	_Atomic uint64_t wpos;
	/* Written by the reader only (read, discard); release, read back relaxed by it and
	 * acquire by queued(). The callback never reads it: it overwrites, the reader counts. */
	_Atomic uint64_t rpos;
	_Atomic uint64_t xruns;       /* callback, relaxed: a counter, no order */
	_Atomic uint64_t overwritten; /* reader, relaxed: a counter, no order */
	_Atomic int aborted;          /* PortAudio's finished callback; seq_cst */
	/* The reader sleeps until wpos reaches wake_at, and is posted only then, once:
	 * the reader stores wake_at then armed (release); the callback loads wake_at
	 * (acquire) and takes armed with an acq_rel exchange, so one wake-up per read. */
	_Atomic uint64_t wake_at;
	_Atomic int armed;
	sem_t ready;
	/* Written by the callback: one slot per callback (callbacks % nstamps), enough
	 * slots to outlive the frames they stamp (see Input_init). adc_stamps and
	 * guessed_stamps: relaxed counters (ADC times from the host API, and stamps that
	 * were the callback's own time because it gave none). */
	mic_stamp_t *stamps;
	uint64_t stamp_mask;
	_Atomic uint64_t stamped; /* callbacks stamped so far: release after the slot */
	_Atomic uint64_t adc_stamps;
	_Atomic uint64_t guessed_stamps;
	_Atomic uint64_t unstamped; /* reader, relaxed: periods read with no stamp found */
	int rate;
	double last_adc; /* reader only: the capture time of the last period read, or 0 */
} Input;

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* When this callback's first frame was captured, on CLOCK_MONOTONIC: the host API's ADC
 * time at its distance before the callback's currentTime (one time base, whatever it
 * is), else the callback's own time minus its frames (counted). Callback only. */
static double capture_time(Input *in, const PaStreamCallbackTimeInfo *time, unsigned long frames)
{
	double now = mono_s();
	if (time && time->inputBufferAdcTime > 0.0 && time->currentTime > 0.0) {
		double age = time->currentTime - time->inputBufferAdcTime;
		if (age >= 0.0 && age < 1.0) { /* a stamp a second old is no stamp: guess */
			atomic_fetch_add_explicit(&in->adc_stamps, 1, memory_order_relaxed);
			return now - age;
		}
	}
	atomic_fetch_add_explicit(&in->guessed_stamps, 1, memory_order_relaxed);
	return now - (double)frames / in->rate;
}

/* Publish the stamp of the callback whose first frame is ring position `pos`. */
static void stamp(Input *in, uint64_t pos, double adc)
{
	uint64_t k = atomic_load_explicit(&in->stamped, memory_order_relaxed);
	mic_stamp_t *s = &in->stamps[k & in->stamp_mask];
	uint32_t seq = atomic_load_explicit(&s->seq, memory_order_relaxed);
	atomic_store_explicit(&s->seq, seq + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	s->pos = pos;
	s->adc = adc;
	atomic_store_explicit(&s->seq, seq + 2, memory_order_release);
	atomic_store_explicit(&in->stamped, k + 1, memory_order_release);
}

/* The capture time of ring position `r`, from the newest stamp at or before it; 0 when
 * none is found (a slot being rewritten, or older than the slots keep). Reader only. */
static double stamp_of(Input *in, uint64_t r)
{
	uint64_t k = atomic_load_explicit(&in->stamped, memory_order_acquire);
	uint64_t n = in->stamp_mask + 1;
	for (uint64_t back = 1; back <= n && back <= k; back++) {
		mic_stamp_t *s = &in->stamps[(k - back) & in->stamp_mask];
		uint32_t before = atomic_load_explicit(&s->seq, memory_order_acquire);
		uint64_t pos = s->pos;
		double adc = s->adc;
		atomic_thread_fence(memory_order_acquire);
		uint32_t after = atomic_load_explicit(&s->seq, memory_order_relaxed);
		if (before != after || (before & 1))
			return 0.0;
		if (pos <= r)
			return adc + (double)(r - pos) / in->rate;
	}
	return 0.0;
}

static int on_mic(const void *input, void *output, unsigned long frames,
		  const PaStreamCallbackTimeInfo *time, PaStreamCallbackFlags flags, void *user)
{
	Input *in = user;
	const int16_t *src = input;
	(void)output;
	double adc = capture_time(in, time, frames);
	if (flags & (paInputOverflow | paInputUnderflow))
		atomic_fetch_add_explicit(&in->xruns, 1, memory_order_relaxed);
	uint64_t w = atomic_load_explicit(&in->wpos, memory_order_relaxed);
	uint64_t cap = in->mask + 1;
	size_t fb = (size_t)in->channels * sizeof(int16_t);
	/* announce the slots about to be rewritten before touching them (see take_period) */
	atomic_store_explicit(&in->wend, w + frames, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	for (uint64_t done = 0; done < frames;) {
		uint64_t at = (w + done) & in->mask;
		uint64_t n = frames - done < cap - at ? frames - done : cap - at;
		if (src)
			memcpy(in->ring + at * in->channels, src + done * in->channels, n * fb);
		else
			memset(in->ring + at * in->channels, 0, n * fb);
		done += n;
	}
	stamp(in, w, adc); /* before wpos: a reader that sees the frames finds their stamp */
	atomic_store_explicit(&in->wpos, w + frames, memory_order_release);
	if (w + frames >= atomic_load_explicit(&in->wake_at, memory_order_acquire) &&
	    atomic_exchange_explicit(&in->armed, 0, memory_order_acq_rel))
		sem_post(&in->ready);
	return paContinue;
}

static void mic_gone(void *user)
{
	Input *in = user;
	atomic_store(&in->aborted, 1);
	sem_post(&in->ready);
}

static void input_close_stream(Input *in)
{
	rt_close_stream(&in->stream, &in->pa_ready);
}

static void Input_dealloc(Input *in)
{
	input_close_stream(in);
	if (in->sem_ready) /* here, not at close(): a read() after close() still waits on it */
		sem_destroy(&in->ready);
	PyMem_Free(in->ring);
	PyMem_Free(in->stamps);
	Py_TYPE(in)->tp_free((PyObject *)in);
}

static int Input_init(Input *in, PyObject *args, PyObject *kwargs)
{
	static char *kw[] = {"device", "rate_hz", "channels", "period_frames", "ring_frames",
			     "latency_s", "realtime", NULL};
	int device, rate, channels, period, ring_frames, realtime = 1;
	double latency;
	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "iiiiid|p", kw, &device, &rate, &channels,
					 &period, &ring_frames, &latency, &realtime))
		return -1;
	if (in->ring) {
		PyErr_SetString(PyExc_RuntimeError, "Input is already open");
		return -1;
	}
	if (channels < 1 || channels > 8 || rate < 8000 || period < 16 || ring_frames < 2 * period) {
		PyErr_Format(PyExc_ValueError, "bad input format: channels=%d rate=%d period=%d ring=%d",
			     channels, rate, period, ring_frames);
		return -1;
	}
	uint64_t cap = 1;
	while (cap < (uint64_t)ring_frames)
		cap <<= 1;
	if (sem_init(&in->ready, 0, 0) != 0) {
		PyErr_SetFromErrno(PyExc_OSError);
		return -1;
	}
	in->sem_ready = 1;
	in->ring = PyMem_Calloc((size_t)cap * (size_t)channels, sizeof(int16_t));
	if (!in->ring) {
		PyErr_NoMemory();
		return -1;
	}
	/* a slot per callback, twice what the ring's frames span: a stamp outlives its frames */
	uint64_t slots = 4;
	while (slots < 2 * (cap / (uint64_t)period + 2))
		slots <<= 1;
	in->stamps = PyMem_Calloc((size_t)slots, sizeof(mic_stamp_t));
	if (!in->stamps) {
		PyErr_NoMemory();
		return -1;
	}
	in->stamp_mask = slots - 1;
	in->rate = rate;
	in->mask = cap - 1;
	in->channels = (uint64_t)channels; /* from here on the methods may use the ring */
	PaError err = Pa_Initialize();
	if (err != paNoError) {
		rt_pa_error("Pa_Initialize", err);
		return -1;
	}
	in->pa_ready = 1;
	return rt_open_stream(&in->stream, 1, device, channels, rate, period, latency, realtime, on_mic, in,
			   mic_gone, "Pa_OpenStream (capture callback)");
}

/* Input.__new__(Input) alone leaves channels 0: a division by zero (SIGFPE) in read(). */
static int input_open(Input *in)
{
	if (in->channels)
		return 1;
	PyErr_SetString(PyExc_RuntimeError, "_rt.Input is not open: __init__ did not run or failed");
	return 0;
}

static PyObject *Input_start(Input *in, PyObject *unused)
{
	(void)unused;
	if (!input_open(in))
		return NULL;
	return rt_start_stream(in->stream, "input");
}

static PyObject *Input_close(Input *in, PyObject *unused)
{
	(void)unused;
	input_close_stream(in);
	Py_RETURN_NONE;
}

/* Test seam (_set_copy_pause_ns): the next copy sleeps this long half-way, so a test
 * can hold a reader inside its copy while the callback writes. 0 in the daemon. */
static _Atomic long copy_pause_ns;

void rt_set_copy_pause_ns(long ns)
{
	atomic_store_explicit(&copy_pause_ns, ns, memory_order_relaxed);
}

static void copy_frames(Input *in, char *buf, uint64_t r, uint64_t want)
{
	size_t fb = (size_t)in->channels * sizeof(int16_t);
	uint64_t cap = in->mask + 1;
	long pause = 0;
	if (atomic_load_explicit(&copy_pause_ns, memory_order_relaxed)) /* one copy only */
		pause = atomic_exchange_explicit(&copy_pause_ns, 0, memory_order_relaxed);
	for (uint64_t done = 0; done < want;) {
		uint64_t at = (r + done) & in->mask;
		uint64_t n = want - done < cap - at ? want - done : cap - at;
		if (pause && n > 1)
			n /= 2; /* a copy in two halves, paused between them */
		memcpy(buf + done * fb, in->ring + at * in->channels, n * fb);
		done += n;
		if (pause && done < want) {
			struct timespec ts = {.tv_sec = pause / 1000000000L, .tv_nsec = pause % 1000000000L};
			nanosleep(&ts, NULL);
			pause = 0;
		}
	}
}

/* Copy `want` frames (at most half the ring) from the ring at the read position into
 * buf, if they are there; 1 if copied. A reader whose oldest frames the callback has
 * rewritten, or rewrote while they were copied, keeps the newest instead and counts
 * what it skipped: never a torn period. Reader thread only. */
static int take_period(Input *in, char *buf, uint64_t want)
{
	uint64_t cap = in->mask + 1;
	uint64_t r = atomic_load_explicit(&in->rpos, memory_order_relaxed);
	for (int tries = 0; tries < 8; tries++) {
		uint64_t w = atomic_load_explicit(&in->wpos, memory_order_acquire);
		uint64_t end = atomic_load_explicit(&in->wend, memory_order_relaxed);
		if (end < w) /* wend is stored first: a stale read of it */
			end = w;
		if (end - r > cap) { /* slots from r on were (or are being) rewritten */
			/* end - w <= one callback <= cap / 2 and want <= cap / 2: stays <= w */
			uint64_t keep = end - cap + want;
			atomic_fetch_add_explicit(&in->overwritten, keep - r, memory_order_relaxed);
			r = keep;
			atomic_store_explicit(&in->rpos, r, memory_order_release);
		}
		if (w - r < want || r > w)
			return 0;
		copy_frames(in, buf, r, want);
		atomic_thread_fence(memory_order_acquire); /* pairs with on_mic's release fence */
		if (atomic_load_explicit(&in->wend, memory_order_relaxed) - r <= cap) {
			in->last_adc = stamp_of(in, r);
			if (in->last_adc == 0.0)
				atomic_fetch_add_explicit(&in->unstamped, 1, memory_order_relaxed);
			atomic_store_explicit(&in->rpos, r + want, memory_order_release);
			return 1;
		}
		/* the callback reached the copied slots: discard the copy, skip ahead (counted) */
	}
	return 0;
}

/* read(out, timeout_s) -> True when `out` (whole frames, int16) was filled; False when the
 * stream died or nothing came within timeout_s. A period already in the ring is taken with
 * the GIL held (a late reader catching up pays no GIL hand-off per period); only a wait
 * for the next one releases it. */
static PyObject *Input_read(Input *in, PyObject *args)
{
	PyObject *target;
	double timeout;
	if (!PyArg_ParseTuple(args, "Od", &target, &timeout))
		return NULL;
	if (!input_open(in))
		return NULL;
	if (!(timeout >= 0.0 && timeout < 3600.0)) {
		PyErr_Format(PyExc_ValueError, "read: timeout_s must be in [0, 3600), got %R", PyTuple_GET_ITEM(args, 1));
		return NULL;
	}
	Py_buffer view;
	if (PyObject_GetBuffer(target, &view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
		return NULL;
	size_t fb = (size_t)in->channels * sizeof(int16_t);
	uint64_t want = (uint64_t)view.len / fb;
	if ((size_t)view.len % fb || want == 0 || want > (in->mask + 1) / 2) {
		PyErr_Format(PyExc_ValueError,
			     "read: %zd bytes is not 1 to %llu whole frames of %d int16 channels (half the ring)",
			     view.len, (unsigned long long)(in->mask + 1) / 2, (int)in->channels);
		PyBuffer_Release(&view);
		return NULL;
	}
	int ok = 1;
	if (take_period(in, view.buf, want)) {
		PyBuffer_Release(&view);
		Py_RETURN_TRUE;
	}
	Py_BEGIN_ALLOW_THREADS
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until); /* not the wall clock: NTP steps it */
	until.tv_sec += (time_t)timeout;
	until.tv_nsec += (long)((timeout - (double)(time_t)timeout) * 1e9);
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec += 1;
		until.tv_nsec -= 1000000000L;
	}
	for (;;) {
		if (take_period(in, view.buf, want))
			break;
		/* arm, then look again: a period completed in between is not missed */
		uint64_t r = atomic_load_explicit(&in->rpos, memory_order_relaxed);
		atomic_store_explicit(&in->wake_at, r + want, memory_order_release);
		atomic_store_explicit(&in->armed, 1, memory_order_release);
		if (atomic_load_explicit(&in->wpos, memory_order_acquire) - r >= want)
			continue;
		if (atomic_load(&in->aborted) ||
		    (sem_clockwait(&in->ready, CLOCK_MONOTONIC, &until) != 0 && errno == ETIMEDOUT)) {
			ok = 0;
			break;
		}
	}
	Py_END_ALLOW_THREADS
	PyBuffer_Release(&view);
	return PyBool_FromLong(ok);
}

/* queued() -> frames captured and not yet read (at most the ring's capacity) */
static PyObject *Input_queued(Input *in, PyObject *unused)
{
	(void)unused;
	uint64_t w = atomic_load_explicit(&in->wpos, memory_order_acquire);
	uint64_t r = atomic_load_explicit(&in->rpos, memory_order_relaxed);
	uint64_t cap = in->mask + 1;
	return PyLong_FromUnsignedLongLong(w - r < cap ? w - r : cap);
}

/* discard(keep) -> frames dropped: skip to the newest `keep` frames (whole or none), not
 * counted as lost (nobody listened: the idle engine resynchronising after a sleep). */
static PyObject *Input_discard(Input *in, PyObject *arg)
{
	if (!input_open(in))
		return NULL;
	unsigned long long keep = PyLong_AsUnsignedLongLong(arg);
	if (keep == (unsigned long long)-1 && PyErr_Occurred())
		return NULL;
	uint64_t w = atomic_load_explicit(&in->wpos, memory_order_acquire);
	uint64_t r = atomic_load_explicit(&in->rpos, memory_order_relaxed);
	if (w - r <= keep)
		return PyLong_FromLong(0);
	atomic_store_explicit(&in->rpos, w - keep, memory_order_release);
	return PyLong_FromUnsignedLongLong(w - keep - r);
}

static PyObject *Input_counters(Input *in, PyObject *unused)
{
	(void)unused;
	return Py_BuildValue("(KK)", (unsigned long long)atomic_load(&in->xruns),
			     (unsigned long long)atomic_load(&in->overwritten));
}

/* captured_ago() -> seconds since the card captured the first frame of the period the
 * last read() took (CLOCK_MONOTONIC, read now), or None when it has no stamp. The caller
 * subtracts it from its own clock's now, as the speaker's DAC stamps are used. */
static PyObject *Input_captured_ago(Input *in, PyObject *unused)
{
	(void)unused;
	if (in->last_adc == 0.0)
		Py_RETURN_NONE;
	return PyFloat_FromDouble(mono_s() - in->last_adc);
}

/* stamp_counts() -> (callbacks stamped with the host API's ADC time, callbacks stamped
 * with their own time because it gave none, periods read with no stamp found) */
static PyObject *Input_stamp_counts(Input *in, PyObject *unused)
{
	(void)unused;
	return Py_BuildValue("(KKK)", (unsigned long long)atomic_load(&in->adc_stamps),
			     (unsigned long long)atomic_load(&in->guessed_stamps),
			     (unsigned long long)atomic_load(&in->unstamped));
}

static PyObject *Input_latency(Input *in, PyObject *unused)
{
	(void)unused;
	const PaStreamInfo *info = in->stream ? Pa_GetStreamInfo(in->stream) : NULL;
	return PyFloat_FromDouble(info ? info->inputLatency : 0.0);
}

static PyMethodDef Input_methods[] = {
	{"start", (PyCFunction)Input_start, METH_NOARGS, "Start the callback."},
	{"close", (PyCFunction)Input_close, METH_NOARGS, "Stop and close the stream (idempotent)."},
	{"read", (PyCFunction)Input_read, METH_VARARGS, "read(out, timeout_s): fill out; False if dead."},
	{"counters", (PyCFunction)Input_counters, METH_NOARGS, "(xruns, frames overwritten)."},
	{"queued", (PyCFunction)Input_queued, METH_NOARGS, "Frames captured, not yet read."},
	{"discard", (PyCFunction)Input_discard, METH_O, "discard(keep): skip to the newest keep frames."},
	{"latency_s", (PyCFunction)Input_latency, METH_NOARGS, "PortAudio's input latency."},
	{"captured_ago", (PyCFunction)Input_captured_ago, METH_NOARGS,
	 "Seconds since the last read period's first frame was captured, or None."},
	{"stamp_counts", (PyCFunction)Input_stamp_counts, METH_NOARGS,
	 "(ADC stamps, stamps guessed from the callback's time, periods read unstamped)."},
	{NULL, NULL, 0, NULL},
};

PyTypeObject InputType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "huxleyd.audio._rt.Input",
	.tp_basicsize = sizeof(Input),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A PortAudio callback capture stream drained into a lock-free ring.",
	.tp_new = PyType_GenericNew,
	.tp_init = (initproc)Input_init,
	.tp_dealloc = (destructor)Input_dealloc,
	.tp_methods = Input_methods,
};
