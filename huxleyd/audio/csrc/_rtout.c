/* _rt: the speaker's deadline, out of the GIL.
 *
 * A PortAudio *callback* playback stream over one single-producer/single-consumer
 * ring of int16 frames at the device rate. The C feeder (_feedthread.c, a thread with no
 * Python in it), or with audio.mix = "python" the Python audio thread, writes mixed
 * periods into the ring tens of milliseconds ahead; PortAudio's callback thread
 * copies them to the device. The callback never takes the GIL, never allocates,
 * never blocks, so a busy Python thread cannot make the speaker miss its deadline.
 *
 * What the callback does each short period (2.5 ms at SCHED_FIFO, 5 ms without):
 *
 * - copy what is queued; silence for what is not (an empty ring costs one memset:
 *   the idle path);
 * - honour a cut (barge-in) requested since the last period: a linear fade over
 *   `fade_frames` of what plays next, then everything queued after the fade is
 *   dropped. Where the fade ended and which frames were dropped are published, so
 *   the engine truncates the item exactly where the listener stopped hearing it;
 * - count xruns from PortAudio's status flags (never by closing the stream), and
 *   count a dropout: a period the ring could not fill while Python said more audio
 *   was queued behind it (expect()), be it part way or at a period boundary. The
 *   card never sees those (it is fed silence), so its xruns alone would lie;
 * - stamp which ring position reaches the DAC when (outputBufferDacTime), so the
 *   playout clock is the device's, not a latency guessed at open. The stamp is moved
 *   onto CLOCK_MONOTONIC in the callback, so that asking "what is heard now" never
 *   enters ALSA from Python: Pa_GetStreamTime takes the PCM's lock (snd_pcm_status),
 *   and a Python thread throttled by the CPU share while holding it kept the callback
 *   waiting past the card's buffer (a speaker xrun at a Pi's share, issue 26).
 *
 * The mic's capture stream (Input) is _rtin.c, in this same extension (_rt.h).
 *
 * Positions are 64-bit frame counts in "written" coordinates: frame k is the k-th
 * frame Python ever wrote. The reader skips forward over dropped frames, so the
 * read position stays in the same coordinates.
 */
#include "_rt.h"
#include <pa_linux_alsa.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define STAMPS 8
#define EXPECT_SOURCES 8 /* bits of expect()'s mask: the engine's sources (it has four) */
enum { PLAYING, FADING, MUTED }; /* recent callbacks kept for "what is at the DAC now" */

typedef struct {
	uint64_t pos;    /* ring position of the first frame of that callback */
	uint64_t frames; /* how many ring frames it played (after skips) */
	double dac;      /* when its first frame reached the DAC (CLOCK_MONOTONIC, seconds) */
} stamp_t;

typedef struct {
	PyObject_HEAD
	PaStream *stream;
	int pa_ready;
	uint64_t channels; /* 0 until __init__ succeeded: every method checks (output_open) */
	int rate;
	int16_t *ring;
	uint64_t mask; /* capacity - 1 (capacity a power of two, in frames) */
	uint64_t fade_frames;
	/* Written by the ring's one producer (the C feeder's thread through the rt_output_*
	 * hooks, or Python's write() when no feeder runs; cut() from asyncio), read by the
	 * callback.
	 * wpos: release store after the frames are copied in (ring_write); the callback's
	 *   acquire load pairs with it, so it never plays a slot before its data.
	 * cut_end_req then cut_req: cut() stores the fade end (release), then bumps
	 *   cut_req (acq_rel); the callback's acquire load of cut_req pairs, and only
	 *   then loads cut_end_req (acquire), so it sees the end that goes with the cut.
	 * resume_at then resume_seq: resume() (or the feeder, rt_output_resume) stores
	 *   both with release, the callback loads resume_seq then resume_at with acquire
	 *   (a new seq comes with its at).
	 * expect: relaxed both ways: a hint about the sources, one period late at worst;
	 *   a mask, bit i set while the engine's source i has audio queued (set by the
	 *   feeder each period it runs, else by the audio thread). */
	_Atomic uint64_t wpos;
	_Atomic uint64_t cut_end_req;
	_Atomic uint32_t cut_req;
	_Atomic uint64_t resume_at;
	_Atomic uint32_t resume_seq;
	_Atomic unsigned expect;
	/* Written by the callback, read by Python.
	 * rpos: release store at the end of each callback, after the slots were read;
	 *   write()'s acquire load pairs with it, so Python never overwrites a slot the
	 *   callback is still reading.
	 * cut_done: release store after drop_from/drop_to (relaxed) are published;
	 *   drops() loads it with acquire first, so the pair it reads is that cut's.
	 * cut_end: relaxed, informational (status()).
	 * callbacks, xruns, starved, dropouts, dropout_frames, source_dropouts[]: relaxed
	 *   counters, no order.
	 * stamp_seq: a seqlock over stamps[]: odd (release) while the callback writes
	 *   a stamp, even (release) after; heard_now() reads it with acquire before and
	 *   after its copy and retries on a change or an odd value.
	 * aborted: PortAudio's finished callback, seq_cst. policy: once, seq_cst. */
	_Atomic uint64_t rpos;
	_Atomic uint32_t cut_done;
	uint32_t cut_started;
	int phase;         /* PLAYING, FADING or MUTED (callback only) */
	uint64_t fade_end; /* ring position where the fade ends (callback only) */
	uint64_t fade_len; /* frames the fade spans, from where it began (callback only) */
	uint64_t fade_in;  /* frames of fade-in left after a cut (callback only) */
	_Atomic uint64_t cut_end;      /* last cut's fade end */
	_Atomic uint64_t drop_from;    /* last cut dropped [drop_from, drop_to) */
	_Atomic uint64_t drop_to;
	_Atomic uint64_t callbacks;
	_Atomic uint64_t xruns;        /* status flags: output underflow/overflow */
	_Atomic uint64_t starved;      /* callbacks that found part of a period queued */
	_Atomic uint64_t dropouts;     /* callbacks short of audio while `expect` was set */
	_Atomic uint64_t dropout_frames; /* the silence they played instead, in frames */
	/* cuts asked while the ring held less than one fade: the fade could only span what
	 * was queued (a steeper ramp, a click), and without the cut the ring would have run
	 * dry there (a dropout the cut hid): the engine was behind its lead, as in a dropout */
	_Atomic uint64_t short_cuts;
	_Atomic uint64_t source_dropouts[EXPECT_SOURCES]; /* per source: its bit was set */
	_Atomic uint32_t stamp_seq;
	uint64_t heard_last; /* heard_now()'s last consistent answer (readers hold the GIL) */
	stamp_t stamps[STAMPS];
	_Atomic int aborted;
	_Atomic int policy; /* the callback thread's scheduling policy, -1 until it ran */
} Output;

/* CLOCK_MONOTONIC in seconds (vDSO: no system call, safe in the callback) */
static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t avail_frames(Output *o)
{
	return atomic_load_explicit(&o->wpos, memory_order_acquire) -
	       atomic_load_explicit(&o->rpos, memory_order_relaxed);
}

/* Copy `n` ring frames starting at `pos` into `out`. */
static void copy_out(Output *o, int16_t *out, uint64_t pos, uint64_t n)
{
	uint64_t cap = o->mask + 1;
	uint64_t at = pos & o->mask;
	uint64_t first = n < cap - at ? n : cap - at;
	size_t fb = (size_t)o->channels * sizeof(int16_t);
	memcpy(out, o->ring + at * o->channels, first * fb);
	if (n > first)
		memcpy(out + first * o->channels, o->ring, (n - first) * fb);
}

/* Gain of the fade-out at ring position `pos`: 1 → 0 over fade_len frames, ending at
 * fade_end. fade_len is fade_frames, or what was queued when the ring held less: a
 * shorter ramp from 1, never a fade that starts part way down (a step: a click). */
static float fade_gain(Output *o, uint64_t pos)
{
	if (pos >= o->fade_end) /* past the end: silent (unsigned, so tested, not clamped) */
		return 0.0f;
	double g = (double)(o->fade_end - pos - 1) / (double)o->fade_len;
	return g > 1.0 ? 1.0f : (float)g;
}

static void apply_gain_ramp(Output *o, int16_t *out, uint64_t n, uint64_t pos, int fade_out)
{
	uint64_t ch = o->channels;
	for (uint64_t i = 0; i < n; i++) {
		float g;
		if (fade_out) {
			g = fade_gain(o, pos + i);
		} else { /* fade_in <= fade_frames: no wrap */
			uint64_t done = o->fade_frames - o->fade_in + i + 1;
			g = done >= o->fade_frames ? 1.0f : (float)done / (float)o->fade_frames;
		}
		for (uint64_t c = 0; c < ch; c++)
			out[i * ch + c] = (int16_t)((float)out[i * ch + c] * g);
	}
	if (!fade_out)
		o->fade_in = o->fade_in > n ? o->fade_in - n : 0;
}

/* A cut was requested: start its fade where Python predicted it (see cut()). */
static void begin_cut(Output *o, uint32_t req, uint64_t rpos, uint64_t wpos)
{
	o->cut_started = req;
	if (o->phase != PLAYING)
		return; /* already fading or muted: the newer cut extends the mute */
	uint64_t end = atomic_load_explicit(&o->cut_end_req, memory_order_acquire);
	if (end < rpos || end - rpos > o->fade_frames)
		end = rpos + o->fade_frames; /* raced with a callback: one period late */
	if (end > wpos)
		end = wpos;
	o->fade_end = end;
	o->fade_len = end - rpos; /* from gain 1 at the next frame played */
	o->fade_in = 0;
	o->phase = end > rpos ? FADING : MUTED;
	atomic_store_explicit(&o->cut_end, end, memory_order_relaxed);
	if (o->phase == MUTED)
		atomic_store_explicit(&o->drop_from, rpos, memory_order_relaxed);
}

/* A period short of `want` frames while the sources in `expect` had audio queued: one
 * dropout, and one for each of those sources (whose audio the listener missed). */
static void count_dropout(Output *o, unsigned expect, uint64_t want)
{
	atomic_fetch_add_explicit(&o->dropouts, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&o->dropout_frames, want, memory_order_relaxed);
	for (unsigned i = 0; i < EXPECT_SOURCES; i++)
		if (expect & (1u << i))
			atomic_fetch_add_explicit(&o->source_dropouts[i], 1, memory_order_relaxed);
}

static int on_device(const void *input, void *output, unsigned long frames,
		     const PaStreamCallbackTimeInfo *time, PaStreamCallbackFlags flags, void *user)
{
	Output *o = user;
	int16_t *out = output;
	uint64_t ch = o->channels;
	(void)input;
	if (atomic_fetch_add_explicit(&o->callbacks, 1, memory_order_relaxed) == 0)
		atomic_store(&o->policy, sched_getscheduler(0)); /* once: did SCHED_FIFO take? */
	if (flags & (paOutputUnderflow | paOutputOverflow))
		atomic_fetch_add_explicit(&o->xruns, 1, memory_order_relaxed);

	uint64_t rpos = atomic_load_explicit(&o->rpos, memory_order_relaxed);
	uint64_t wpos = atomic_load_explicit(&o->wpos, memory_order_acquire);
	uint32_t req = atomic_load_explicit(&o->cut_req, memory_order_acquire);
	if (req != o->cut_started)
		begin_cut(o, req, rpos, wpos);

	uint64_t first = rpos; /* the ring position of out[0], for the DAC stamp */
	uint64_t played = 0;   /* ring frames that went out (not dropped) */
	uint64_t done = 0;     /* output frames filled */
	while (done < frames) {
		uint64_t want = frames - done;
		if (o->phase == MUTED) {
			/* drop what the old mix queued, until Python says where new audio starts */
			uint32_t ack = atomic_load_explicit(&o->resume_seq, memory_order_acquire);
			uint64_t at = atomic_load_explicit(&o->resume_at, memory_order_acquire);
			int acked = ack == o->cut_started;
			uint64_t target = acked ? (at > rpos ? at : rpos) : wpos;
			rpos = target < wpos ? target : wpos;
			if (acked && rpos >= at) {
				atomic_store_explicit(&o->drop_to, rpos, memory_order_relaxed);
				o->phase = PLAYING;
				o->fade_in = o->fade_frames;
				atomic_store_explicit(&o->cut_done, o->cut_started, memory_order_release);
				if (played == 0)
					first = rpos;
				continue;
			}
			memset(out + done * ch, 0, want * ch * sizeof(int16_t));
			done = frames;
			break;
		}
		uint64_t queued = wpos - rpos;
		uint64_t take = queued < want ? queued : want;
		if (o->phase == FADING && take > o->fade_end - rpos)
			take = o->fade_end - rpos;
		if (take == 0) {
			if (o->phase == PLAYING && queued == 0 && played > 0)
				atomic_fetch_add_explicit(&o->starved, 1, memory_order_relaxed);
			/* ran dry, part way or at the boundary, with more audio on its way */
			unsigned expect = atomic_load_explicit(&o->expect, memory_order_relaxed);
			if (o->phase == PLAYING && expect)
				count_dropout(o, expect, want);
			memset(out + done * ch, 0, want * ch * sizeof(int16_t));
			done = frames;
			break;
		}
		copy_out(o, out + done * ch, rpos, take);
		if (o->phase == FADING)
			apply_gain_ramp(o, out + done * ch, take, rpos, 1);
		else if (o->fade_in)
			apply_gain_ramp(o, out + done * ch, take, rpos, 0);
		rpos += take;
		played += take;
		done += take;
		if (o->phase == FADING && rpos >= o->fade_end) {
			o->phase = MUTED;
			atomic_store_explicit(&o->drop_from, rpos, memory_order_relaxed);
		}
	}

	/* stamp: ring frames [first, first + played) reach the DAC from outputBufferDacTime */
	uint32_t seq = atomic_load_explicit(&o->stamp_seq, memory_order_relaxed);
	atomic_store_explicit(&o->stamp_seq, seq + 1, memory_order_release);
	atomic_thread_fence(memory_order_release);
	stamp_t *s = &o->stamps[(seq / 2) % STAMPS];
	s->pos = first;
	s->frames = played;
	/* currentTime is the same status read as the DAC time: their difference is the
	 * device's delay, which monotonic "now" carries over without an ALSA call */
	s->dac = mono_s() + (time->outputBufferDacTime - time->currentTime);
	atomic_store_explicit(&o->stamp_seq, seq + 2, memory_order_release);
	atomic_store_explicit(&o->rpos, rpos, memory_order_release);
	return paContinue;
}

static void stream_gone(void *user)
{
	Output *o = user;
	atomic_store(&o->aborted, 1);
}

int rt_close_stream(PaStream **stream, int *pa_ready)
{
	/* Both taken while the GIL is held, before it is released: a second close() from
	 * another thread meanwhile (the audio thread noticing the dead stream) finds
	 * nothing left to do, instead of calling Pa_Terminate in the middle of this one's
	 * Pa_AbortStream (PortAudio is not thread-safe; that hung under load). */
	PaStream *open = *stream;
	int ready = *pa_ready;
	*stream = NULL;
	*pa_ready = 0;
	Py_BEGIN_ALLOW_THREADS
	if (open) {
		Pa_AbortStream(open);
		Pa_CloseStream(open);
	}
	if (ready)
		Pa_Terminate();
	Py_END_ALLOW_THREADS
	return ready;
}

static void output_close_stream(Output *o)
{
	rt_close_stream(&o->stream, &o->pa_ready);
}

static void Output_dealloc(Output *o)
{
	output_close_stream(o);
	PyMem_Free(o->ring);
	Py_TYPE(o)->tp_free((PyObject *)o);
}

PyObject *rt_pa_error(const char *what, PaError err)
{
	return PyErr_Format(PyExc_OSError, "%s: %s (PortAudio %d)", what, Pa_GetErrorText(err), err);
}

/* One callback stream on `device`, playback (input = 0) or capture (input = 1),
 * asking for SCHED_FIFO when `realtime` (ALSA only; PortAudio quietly stays at
 * normal priority where the system refuses it: root, CAP_SYS_NICE or an rtprio
 * limit is needed). 0, or -1 with a Python error set. */
int rt_open_stream(PaStream **out, int input, int device, int channels, double rate,
		       long period, double latency, int realtime, PaStreamCallback *callback,
		       void *user, PaStreamFinishedCallback *finished, const char *what)
{
	if (device < 0 || device >= Pa_GetDeviceCount()) {
		PyErr_Format(PyExc_OSError, "no PortAudio device %d", device);
		return -1;
	}
	PaStreamParameters params;
	memset(&params, 0, sizeof(params));
	params.device = device;
	params.channelCount = channels;
	params.sampleFormat = paInt16;
	params.suggestedLatency = latency;
	PaStream *stream = NULL;
	PaError err;
	Py_BEGIN_ALLOW_THREADS
	err = Pa_OpenStream(&stream, input ? &params : NULL, input ? NULL : &params, rate,
			    (unsigned long)period, paClipOff | paDitherOff, callback, user);
	Py_END_ALLOW_THREADS
	if (err != paNoError) {
		rt_pa_error(what, err);
		return -1;
	}
	err = Pa_SetStreamFinishedCallback(stream, finished);
	if (err != paNoError) { /* without it a dead stream would never be noticed: refuse */
		Py_BEGIN_ALLOW_THREADS
		Pa_CloseStream(stream);
		Py_END_ALLOW_THREADS
		rt_pa_error("Pa_SetStreamFinishedCallback", err);
		return -1;
	}
	*out = stream;
	const PaDeviceInfo *info = Pa_GetDeviceInfo(device);
	const PaHostApiInfo *host = info ? Pa_GetHostApiInfo(info->hostApi) : NULL;
	if (realtime && host && host->type == paALSA)
		PaAlsa_EnableRealtimeScheduling(stream, 1);
	return 0;
}

PyObject *rt_start_stream(PaStream *stream, const char *which)
{
	if (!stream)
		return PyErr_Format(PyExc_OSError, "%s stream is closed", which);
	PaError err;
	Py_BEGIN_ALLOW_THREADS
	err = Pa_StartStream(stream);
	Py_END_ALLOW_THREADS
	if (err != paNoError)
		return rt_pa_error("Pa_StartStream", err);
	Py_RETURN_NONE;
}

static int Output_init(Output *o, PyObject *args, PyObject *kwargs)
{
	static char *kw[] = {"device", "rate_hz", "channels", "period_frames", "ring_frames",
			     "fade_frames", "latency_s", "realtime", NULL};
	int device, rate, channels, period, ring_frames, fade, realtime = 1;
	double latency;
	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "iiiiiid|p", kw, &device, &rate, &channels,
					 &period, &ring_frames, &fade, &latency, &realtime))
		return -1;
	if (o->ring) {
		PyErr_SetString(PyExc_RuntimeError, "Output is already open");
		return -1;
	}
	if (channels < 1 || channels > 8 || rate < 8000 || period < 16 || fade < 1 ||
	    ring_frames < 2 * period) {
		PyErr_Format(PyExc_ValueError,
			     "bad output format: channels=%d rate=%d period=%d ring=%d fade=%d", channels,
			     rate, period, ring_frames, fade);
		return -1;
	}
	uint64_t cap = 1;
	while (cap < (uint64_t)ring_frames)
		cap <<= 1;
	o->ring = PyMem_Calloc((size_t)cap * (size_t)channels, sizeof(int16_t));
	if (!o->ring) {
		PyErr_NoMemory();
		return -1;
	}
	o->mask = cap - 1;
	o->rate = rate;
	atomic_store(&o->policy, -1);
	o->fade_frames = (uint64_t)fade;
	o->channels = (uint64_t)channels; /* last: from here on the methods may use the ring */

	PaError err = Pa_Initialize();
	if (err != paNoError) {
		rt_pa_error("Pa_Initialize", err);
		return -1;
	}
	o->pa_ready = 1;
	return rt_open_stream(&o->stream, 0, device, channels, rate, period, latency, realtime, on_device,
			   o, stream_gone, "Pa_OpenStream (playback callback)");
}

/* Methods that touch the ring or divide by the frame size need a successful __init__:
 * Output.__new__(Output) alone leaves channels 0 (a division by zero, SIGFPE). */
static int output_open(Output *o)
{
	if (o->channels)
		return 1;
	PyErr_SetString(PyExc_RuntimeError, "_rt.Output is not open: __init__ did not run or failed");
	return 0;
}

static PyObject *Output_start(Output *o, PyObject *unused)
{
	(void)unused;
	if (!output_open(o))
		return NULL;
	return rt_start_stream(o->stream, "output");
}

static PyObject *Output_close(Output *o, PyObject *unused)
{
	(void)unused;
	output_close_stream(o);
	Py_RETURN_NONE;
}

/* Copy up to n interleaved frames into the ring after wpos; publish them. The ring's one
 * producer at a time: Python's write() (GIL held), or the C feeder while it runs. */
static uint64_t ring_write(Output *o, const int16_t *src, uint64_t n)
{
	size_t fb = (size_t)o->channels * sizeof(int16_t);
	uint64_t w = atomic_load_explicit(&o->wpos, memory_order_relaxed);
	uint64_t r = atomic_load_explicit(&o->rpos, memory_order_acquire);
	uint64_t room = (o->mask + 1) - (w - r);
	if (n > room)
		n = room;
	uint64_t at = w & o->mask;
	uint64_t first = n < (o->mask + 1) - at ? n : (o->mask + 1) - at;
	memcpy(o->ring + at * o->channels, src, first * fb);
	if (n > first)
		memcpy(o->ring, src + first * o->channels, (n - first) * fb);
	atomic_store_explicit(&o->wpos, w + n, memory_order_release);
	return n;
}

/* write(frames: int16 buffer, C-contiguous, whole frames) -> frames queued (never blocks) */
static PyObject *Output_write(Output *o, PyObject *arg)
{
	if (!output_open(o))
		return NULL;
	Py_buffer view;
	if (PyObject_GetBuffer(arg, &view, PyBUF_C_CONTIGUOUS) < 0)
		return NULL;
	size_t fb = (size_t)o->channels * sizeof(int16_t);
	if ((size_t)view.len % fb) {
		PyErr_Format(PyExc_ValueError, "write: %zd bytes is not whole frames of %d int16 channels",
			     view.len, (int)o->channels);
		PyBuffer_Release(&view);
		return NULL;
	}
	uint64_t n = ring_write(o, view.buf, (uint64_t)view.len / fb);
	PyBuffer_Release(&view);
	return PyLong_FromUnsignedLongLong(n);
}

/* cut() -> (seq, fade_end): fade out from the next frame the callback plays, then mute.
 * fade_end is where the fade will end (ring position): what the listener will have heard. */
static PyObject *Output_cut(Output *o, PyObject *unused)
{
	(void)unused;
	if (!output_open(o))
		return NULL;
	uint64_t r = atomic_load_explicit(&o->rpos, memory_order_acquire);
	uint64_t w = atomic_load_explicit(&o->wpos, memory_order_acquire);
	uint64_t end = r + (o->fade_frames < w - r ? o->fade_frames : w - r);
	if (w - r < o->fade_frames)
		atomic_fetch_add_explicit(&o->short_cuts, 1, memory_order_relaxed);
	atomic_store_explicit(&o->cut_end_req, end, memory_order_release);
	uint32_t seq = atomic_fetch_add_explicit(&o->cut_req, 1, memory_order_acq_rel) + 1;
	return Py_BuildValue("(IK)", (unsigned)seq, (unsigned long long)end);
}

/* resume(seq, at): audio written from ring position `at` on is after cut `seq`: play it. */
static PyObject *Output_resume(Output *o, PyObject *args)
{
	unsigned int seq;
	unsigned long long at;
	if (!output_open(o) || !PyArg_ParseTuple(args, "IK", &seq, &at))
		return NULL;
	atomic_store_explicit(&o->resume_at, (uint64_t)at, memory_order_release);
	atomic_store_explicit(&o->resume_seq, (uint32_t)seq, memory_order_release);
	Py_RETURN_NONE;
}

/* expect(mask): bit i set while the engine's source i has audio queued behind what was
 * written (0: none; True is source 0). While any is set, a period the ring cannot fill
 * is a dropout, counted for each of those sources too. */
static PyObject *Output_expect(Output *o, PyObject *arg)
{
	unsigned long mask = PyLong_AsUnsignedLong(arg);
	if (mask == (unsigned long)-1 && PyErr_Occurred())
		return NULL;
	if (mask >> EXPECT_SOURCES)
		return PyErr_Format(PyExc_ValueError, "expect: mask %lu names more than %d sources",
				    mask, EXPECT_SOURCES);
	atomic_store_explicit(&o->expect, (unsigned)mask, memory_order_relaxed);
	Py_RETURN_NONE;
}

/* dropouts() -> (periods short of audio while expected, frames of silence played) */
static PyObject *Output_dropouts(Output *o, PyObject *unused)
{
	(void)unused;
	return Py_BuildValue("(KK)", (unsigned long long)atomic_load(&o->dropouts),
			     (unsigned long long)atomic_load(&o->dropout_frames));
}

/* source_dropouts() -> per expect() bit, the dropouts while that source had audio queued */
static PyObject *Output_source_dropouts(Output *o, PyObject *unused)
{
	(void)unused;
	PyObject *counts = PyTuple_New(EXPECT_SOURCES);
	for (Py_ssize_t i = 0; counts && i < EXPECT_SOURCES; i++) {
		PyObject *n = PyLong_FromUnsignedLongLong(atomic_load(&o->source_dropouts[i]));
		if (!n) {
			Py_CLEAR(counts);
			break;
		}
		PyTuple_SET_ITEM(counts, i, n);
	}
	return counts;
}

/* The ring position at the DAC now: the newest stamp whose first frame has been heard. */
static uint64_t heard_now(Output *o, double now)
{
	stamp_t copy[STAMPS];
	uint32_t before, after;
	int tries = 0;
	do {
		before = atomic_load_explicit(&o->stamp_seq, memory_order_acquire);
		memcpy(copy, o->stamps, sizeof(copy));
		atomic_thread_fence(memory_order_acquire);
		after = atomic_load_explicit(&o->stamp_seq, memory_order_acquire);
	} while ((before != after || (before & 1)) && ++tries < 100);
	if (before != after || (before & 1))
		return o->heard_last; /* never a torn copy: the last consistent answer */
	uint64_t newest = before / 2; /* stamps written so far */
	uint64_t count = newest < STAMPS ? newest : STAMPS;
	for (uint64_t k = 0; k < count; k++) {
		stamp_t *s = &copy[(newest - 1 - k) % STAMPS];
		if (s->dac <= now) {
			uint64_t into = (uint64_t)((now - s->dac) * o->rate);
			o->heard_last = s->pos + (into < s->frames ? into : s->frames);
			return o->heard_last;
		}
	}
	if (count) /* nothing reached the DAC yet */
		o->heard_last = copy[(newest - count) % STAMPS].pos;
	return o->heard_last;
}

static PyObject *Output_status(Output *o, PyObject *unused)
{
	(void)unused;
	double now = mono_s(); /* never Pa_GetStreamTime: see the stamp in on_device */
	uint64_t heard = heard_now(o, now);
	return Py_BuildValue(
		"{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:I,s:I,s:i,s:d}", "written",
		(unsigned long long)atomic_load(&o->wpos), "read", (unsigned long long)atomic_load(&o->rpos),
		"heard", (unsigned long long)heard, "callbacks",
		(unsigned long long)atomic_load(&o->callbacks), "xruns",
		(unsigned long long)atomic_load(&o->xruns), "starved",
		(unsigned long long)atomic_load(&o->starved), "dropouts",
		(unsigned long long)atomic_load(&o->dropouts), "dropout_frames",
		(unsigned long long)atomic_load(&o->dropout_frames), "short_cuts",
		(unsigned long long)atomic_load(&o->short_cuts), "cut_end",
		(unsigned long long)atomic_load(&o->cut_end), "drop_from",
		(unsigned long long)atomic_load(&o->drop_from), "drop_to",
		(unsigned long long)atomic_load(&o->drop_to), "cut_req", (unsigned)atomic_load(&o->cut_req),
		"cut_done", (unsigned)atomic_load(&o->cut_done), "aborted", atomic_load(&o->aborted),
		"now", now);
}

static PyObject *Output_written(Output *o, PyObject *unused)
{
	(void)unused;
	return PyLong_FromUnsignedLongLong(atomic_load_explicit(&o->wpos, memory_order_relaxed));
}

static PyObject *Output_heard(Output *o, PyObject *unused)
{
	(void)unused;
	return PyLong_FromUnsignedLongLong(heard_now(o, mono_s()));
}

/* drops() -> (cuts completed, first dropped frame, first frame played after) of the last cut */
static PyObject *Output_drops(Output *o, PyObject *unused)
{
	(void)unused;
	uint32_t done = atomic_load_explicit(&o->cut_done, memory_order_acquire);
	return Py_BuildValue("(IKK)", (unsigned)done,
			     (unsigned long long)atomic_load_explicit(&o->drop_from, memory_order_relaxed),
			     (unsigned long long)atomic_load_explicit(&o->drop_to, memory_order_relaxed));
}

static PyObject *Output_xruns(Output *o, PyObject *unused)
{
	(void)unused;
	return PyLong_FromUnsignedLongLong(atomic_load_explicit(&o->xruns, memory_order_relaxed));
}

/* realtime() -> True/False once the callback has run (SCHED_FIFO or RR?), None before */
static PyObject *Output_realtime(Output *o, PyObject *unused)
{
	(void)unused;
	int policy = atomic_load(&o->policy);
	if (policy < 0)
		Py_RETURN_NONE;
	return PyBool_FromLong(policy == SCHED_FIFO || policy == SCHED_RR);
}

static PyObject *Output_queued(Output *o, PyObject *unused)
{
	(void)unused;
	return PyLong_FromUnsignedLongLong(avail_frames(o));
}

static PyObject *Output_latency(Output *o, PyObject *unused)
{
	(void)unused;
	const PaStreamInfo *info = o->stream ? Pa_GetStreamInfo(o->stream) : NULL;
	return PyFloat_FromDouble(info ? info->outputLatency : 0.0);
}

static PyObject *Output_active(Output *o, PyObject *unused)
{
	(void)unused;
	if (!o->stream || atomic_load(&o->aborted))
		Py_RETURN_FALSE;
	return PyBool_FromLong(Pa_IsStreamActive(o->stream) == 1);
}

static PyMethodDef Output_methods[] = {
	{"start", (PyCFunction)Output_start, METH_NOARGS, "Start the callback."},
	{"close", (PyCFunction)Output_close, METH_NOARGS, "Stop and close the stream (idempotent)."},
	{"write", (PyCFunction)Output_write, METH_O, "Queue int16 frames; return how many fit."},
	{"cut", (PyCFunction)Output_cut, METH_NOARGS, "Fade out what plays, then mute: (seq, fade_end)."},
	{"resume", (PyCFunction)Output_resume, METH_VARARGS, "resume(seq, at): new audio starts at `at`."},
	{"status", (PyCFunction)Output_status, METH_NOARGS, "Counters and positions (a dict)."},
	{"written", (PyCFunction)Output_written, METH_NOARGS, "Frames ever written."},
	{"heard", (PyCFunction)Output_heard, METH_NOARGS, "The ring position at the DAC now."},
	{"drops", (PyCFunction)Output_drops, METH_NOARGS, "(cuts done, drop_from, drop_to)."},
	{"xruns", (PyCFunction)Output_xruns, METH_NOARGS, "Underflows/overflows the callback saw."},
	{"expect", (PyCFunction)Output_expect, METH_O, "expect(mask): sources with audio queued upstream."},
	{"dropouts", (PyCFunction)Output_dropouts, METH_NOARGS, "(periods short while expected, frames)."},
	{"source_dropouts", (PyCFunction)Output_source_dropouts, METH_NOARGS,
	 "Dropouts per expect() bit (source)."},
	{"realtime", (PyCFunction)Output_realtime, METH_NOARGS, "Does the callback run SCHED_FIFO?"},
	{"queued", (PyCFunction)Output_queued, METH_NOARGS, "Frames queued, not yet played."},
	{"latency_s", (PyCFunction)Output_latency, METH_NOARGS, "PortAudio's output latency."},
	{"active", (PyCFunction)Output_active, METH_NOARGS, "True while the callback runs."},
	{NULL, NULL, 0, NULL},
};

PyTypeObject OutputType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "huxleyd.audio._rt.Output",
	.tp_basicsize = sizeof(Output),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A PortAudio callback playback stream fed through a lock-free ring.",
	.tp_new = PyType_GenericNew,
	.tp_init = (initproc)Output_init,
	.tp_dealloc = (destructor)Output_dealloc,
	.tp_methods = Output_methods,
};

/* ---- the C feeder's hooks (_rt.h); no GIL, no Python objects touched but the Output ---- */

int rt_output_is_open(PyObject *obj)
{
	return PyObject_TypeCheck(obj, &OutputType) && ((Output *)obj)->channels != 0;
}

uint64_t rt_output_channels(PyObject *obj)
{
	return ((Output *)obj)->channels;
}

uint64_t rt_output_written(PyObject *obj)
{
	return atomic_load_explicit(&((Output *)obj)->wpos, memory_order_relaxed);
}

uint64_t rt_output_queued(PyObject *obj)
{
	return avail_frames((Output *)obj);
}

uint64_t rt_output_room(PyObject *obj)
{
	Output *o = (Output *)obj;
	return (o->mask + 1) - avail_frames(o);
}

uint64_t rt_output_write(PyObject *obj, const int16_t *frames, uint64_t n)
{
	return ring_write((Output *)obj, frames, n);
}

uint32_t rt_output_cut_req(PyObject *obj)
{
	return atomic_load_explicit(&((Output *)obj)->cut_req, memory_order_acquire);
}

void rt_output_resume(PyObject *obj, uint32_t seq, uint64_t at)
{
	Output *o = (Output *)obj;
	atomic_store_explicit(&o->resume_at, at, memory_order_release);
	atomic_store_explicit(&o->resume_seq, seq, memory_order_release);
}

void rt_output_expect(PyObject *obj, unsigned mask)
{
	atomic_store_explicit(&((Output *)obj)->expect, mask & ((1u << EXPECT_SOURCES) - 1),
			      memory_order_relaxed);
}
