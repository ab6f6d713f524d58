/* _rtin: the mic side of huxleyd.audio._rtout (one extension, two files; see _rt.h).
 *
 * A PortAudio callback capture stream copies each short period into a lock-free ring;
 * the audio thread's read() takes a whole engine period from it. A period already
 * there is copied with the GIL held; only a wait for the next one releases it. A
 * Python thread late by up to the ring's length loses nothing (the engine drains
 * every whole period queued); later than that, the oldest frames are overwritten
 * and counted, never an xrun at the card. After an idle sleep, discard() skips to
 * the newest frames without counting them (nobody listened).
 */
#include "_rt.h"
#include <errno.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

typedef struct {
	PyObject_HEAD
	PaStream *stream;
	int pa_ready;
	int channels;
	int16_t *ring;
	uint64_t mask;
	_Atomic uint64_t wpos; /* callback */
	_Atomic uint64_t rpos; /* Python */
	_Atomic uint64_t xruns;
	_Atomic uint64_t overwritten;
	_Atomic int aborted;
	_Atomic uint64_t wake_at; /* the reader sleeps until wpos reaches this ... */
	_Atomic int armed;        /* ... and only then is posted: one wake-up per read */
	sem_t ready;
} Input;

static int on_mic(const void *input, void *output, unsigned long frames,
		  const PaStreamCallbackTimeInfo *time, PaStreamCallbackFlags flags, void *user)
{
	Input *in = user;
	const int16_t *src = input;
	(void)output;
	(void)time;
	if (flags & (paInputOverflow | paInputUnderflow))
		atomic_fetch_add_explicit(&in->xruns, 1, memory_order_relaxed);
	uint64_t w = atomic_load_explicit(&in->wpos, memory_order_relaxed);
	uint64_t cap = in->mask + 1;
	size_t fb = (size_t)in->channels * sizeof(int16_t);
	for (uint64_t done = 0; done < frames;) {
		uint64_t at = (w + done) & in->mask;
		uint64_t n = frames - done < cap - at ? frames - done : cap - at;
		if (src)
			memcpy(in->ring + at * in->channels, src + done * in->channels, n * fb);
		else
			memset(in->ring + at * in->channels, 0, n * fb);
		done += n;
	}
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
	if (rt_close_stream(&in->stream, &in->pa_ready))
		sem_destroy(&in->ready);
}

static void Input_dealloc(Input *in)
{
	input_close_stream(in);
	PyMem_Free(in->ring);
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
	in->ring = PyMem_Calloc(cap * channels, sizeof(int16_t));
	if (!in->ring) {
		PyErr_NoMemory();
		return -1;
	}
	in->mask = cap - 1;
	in->channels = channels;
	PaError err = Pa_Initialize();
	if (err != paNoError) {
		rt_pa_error("Pa_Initialize", err);
		return -1;
	}
	in->pa_ready = 1;
	sem_init(&in->ready, 0, 0);
	return rt_open_stream(&in->stream, 1, device, channels, rate, period, latency, realtime, on_mic, in,
			   mic_gone, "Pa_OpenStream (capture callback)");
}

static PyObject *Input_start(Input *in, PyObject *unused)
{
	(void)unused;
	return rt_start_stream(in->stream, "input");
}

static PyObject *Input_close(Input *in, PyObject *unused)
{
	(void)unused;
	input_close_stream(in);
	Py_RETURN_NONE;
}

/* Copy `want` frames from the ring at the read position into buf, if they are there
 * (the oldest kept when the reader fell a whole ring behind); 1 if copied. Any thread. */
static int take_period(Input *in, char *buf, uint64_t want)
{
	size_t fb = (size_t)in->channels * sizeof(int16_t);
	uint64_t cap = in->mask + 1;
	uint64_t w = atomic_load_explicit(&in->wpos, memory_order_acquire);
	uint64_t r = atomic_load_explicit(&in->rpos, memory_order_relaxed);
	if (w - r > cap) { /* the reader fell a whole ring behind: keep the newest */
		atomic_fetch_add_explicit(&in->overwritten, w - r - cap + want, memory_order_relaxed);
		r = w - cap + want;
	}
	if (w - r < want)
		return 0;
	for (uint64_t done = 0; done < want;) {
		uint64_t at = (r + done) & in->mask;
		uint64_t n = want - done < cap - at ? want - done : cap - at;
		memcpy(buf + done * fb, in->ring + at * in->channels, n * fb);
		done += n;
	}
	atomic_store_explicit(&in->rpos, r + want, memory_order_release);
	return 1;
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
	Py_buffer view;
	if (PyObject_GetBuffer(target, &view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
		return NULL;
	size_t fb = (size_t)in->channels * sizeof(int16_t);
	uint64_t want = (uint64_t)view.len / fb;
	int ok = 1;
	if (take_period(in, view.buf, want)) {
		PyBuffer_Release(&view);
		Py_RETURN_TRUE;
	}
	Py_BEGIN_ALLOW_THREADS
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
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
		if (atomic_load(&in->aborted) || (sem_timedwait(&in->ready, &until) != 0 && errno == ETIMEDOUT)) {
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
	{NULL, NULL, 0, NULL},
};

PyTypeObject InputType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "huxleyd.audio._rtout.Input",
	.tp_basicsize = sizeof(Input),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A PortAudio callback capture stream drained into a lock-free ring.",
	.tp_new = PyType_GenericNew,
	.tp_init = (initproc)Input_init,
	.tp_dealloc = (destructor)Input_dealloc,
	.tp_methods = Input_methods,
};
