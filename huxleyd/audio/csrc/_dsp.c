/* _dsp: the audio thread's per-period arithmetic, in C, with the GIL held.
 *
 * Every function here does short, bounded work on preallocated buffers (one
 * period: a few hundred to a few thousand samples) and returns. None releases
 * the GIL: numpy ufuncs over more than ~500 elements do, and with a busy Python
 * thread in the process each re-acquire costs up to the 5 ms switch interval,
 * dozens of times a period. Here a period's mixing is a handful of calls that
 * keep the GIL from start to end.
 *
 * The arithmetic is the numpy reference's (tests/oracles/numpy_mixer.py, limiter.py,
 * resample.py, chains.py), float32 operation for operation, so the output is
 * bit-identical where numpy's order is reproduced (gains, fades, mixing, the
 * resampler's row sums, the int16 conversion) and within float tolerance where
 * it is not (the limiter's tanh, the meter's power). Built with
 * -ffp-contract=off: a fused multiply-add would round differently from numpy.
 *
 * Buffers come through the buffer protocol (numpy arrays, C-contiguous); the
 * caller (huxleyd/audio/dsp.py) owns their shapes, this file checks their sizes.
 */
#include "_dspbuf.h" /* first: Python.h before the standard headers */
#include "_dspmix.h"
#include "_mixcore.h"
#include "_polyphase.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* ---- mixing ------------------------------------------------------------------------- */

static const float TO_FLOAT = 1.0f / 32768.0f;

/* mix_source(mix, ring, start, count, offset, start_gain, end_gain, unit, fade)
 *
 * Add `count` ring samples (int16, from ring index `start`, wrapping) into
 * mix[offset:], scaled to [-1, 1) and multiplied by the gain ramp
 * unit * (end - start) + start (times `fade`, unless None); a constant gain when
 * start == end and there is no fade. SourceChannel.render's arithmetic. */
static PyObject *mix_source(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	(void)self;
	if (nargs != 9) {
		PyErr_SetString(PyExc_TypeError, "mix_source takes 9 arguments");
		return NULL;
	}
	Py_ssize_t start = PyLong_AsSsize_t(args[2]);
	Py_ssize_t count = PyLong_AsSsize_t(args[3]);
	Py_ssize_t offset = PyLong_AsSsize_t(args[4]);
	double g0 = PyFloat_AsDouble(args[5]);
	double g1 = PyFloat_AsDouble(args[6]);
	if (PyErr_Occurred())
		return NULL;
	buf_t mix, ring, unit, fade = {.held = 0};
	PyObject *result = NULL;
	unit.held = ring.held = 0;
	if (take(&mix, args[0], 4, 1, "mix") < 0 || take(&ring, args[1], 2, 0, "ring") < 0 ||
	    take(&unit, args[7], 4, 0, "unit") < 0 ||
	    (args[8] != Py_None && take(&fade, args[8], 4, 0, "fade") < 0))
		goto done;
	Py_ssize_t n = COUNT(mix), cap = COUNT(ring);
	if (offset < 0 || count < 0 || offset + count > n || start < 0 || start >= cap ||
	    count > cap || need(COUNT(unit), n, "unit") < 0 ||
	    (fade.held && need(COUNT(fade), n, "fade") < 0)) {
		if (!PyErr_Occurred())
			PyErr_Format(PyExc_ValueError, "mix_source: %zd samples at %zd do not fit", count,
				     offset);
		goto done;
	}
	mc_add_source(mix.view.buf, ring.view.buf, (uint64_t)cap, (uint64_t)start, (uint64_t)count,
		      (uint64_t)offset, g0, g1, unit.view.buf, fade.held ? fade.view.buf : NULL);
	result = Py_NewRef(Py_None);
done:
	drop(&mix);
	drop(&ring);
	drop(&unit);
	drop(&fade);
	return result;
}

/* gain(buf, unit, start, end): the master gain stage, ramped over the period */
static PyObject *gain(PyObject *self, PyObject *args)
{
	(void)self;
	PyObject *a, *b;
	double g0, g1;
	if (!PyArg_ParseTuple(args, "OOdd", &a, &b, &g0, &g1))
		return NULL;
	buf_t buf, unit;
	unit.held = 0;
	PyObject *result = NULL;
	if (take(&buf, a, 4, 1, "buf") < 0 || take(&unit, b, 4, 0, "unit") < 0 ||
	    need(COUNT(unit), COUNT(buf), "unit") < 0)
		goto done;
	mc_gain(buf.view.buf, unit.view.buf, (uint64_t)COUNT(buf), g0, g1);
	result = Py_NewRef(Py_None);
done:
	drop(&buf);
	drop(&unit);
	return result;
}

/* ---- the limiter -------------------------------------------------------------------- */

/* limit(mix, gain, threshold, release_step, knee, attack, unit) -> (gain, active)
 *
 * SoftLimiter.process: the block gain (down within the attack shape, up at
 * release_step per period, ramped), then tanh soft clipping of what still
 * exceeds the threshold. Returns the new block gain and whether either stage
 * changed the signal. */
static PyObject *limit(PyObject *self, PyObject *args)
{
	(void)self;
	PyObject *a, *att, *un;
	double start, threshold, release, knee;
	if (!PyArg_ParseTuple(args, "OddddOO", &a, &start, &threshold, &release, &knee, &att, &un))
		return NULL;
	buf_t mix, attack, unit;
	attack.held = unit.held = 0;
	PyObject *result = NULL;
	if (take(&mix, a, 4, 1, "mix") < 0 || take(&attack, att, 4, 0, "attack") < 0 ||
	    take(&unit, un, 4, 0, "unit") < 0 || need(COUNT(attack), COUNT(mix), "attack") < 0 ||
	    need(COUNT(unit), COUNT(mix), "unit") < 0)
		goto done;
	int active;
	double end = mc_limit(mix.view.buf, (uint64_t)COUNT(mix), start, threshold, release, knee,
			      attack.view.buf, unit.view.buf, &active);
	result = Py_BuildValue("(di)", end, active);
done:
	drop(&mix);
	drop(&attack);
	drop(&unit);
	return result;
}

/* ---- resampling --------------------------------------------------------------------- */

/* resample(ext, block, taps, out, up, down): StreamResampler.process, by pp_resample
 * (_polyphase.c, which the C feeder runs too). A bad shape is a ValueError. */
static int polyphase(float *ext, Py_ssize_t ext_n, const float *block, Py_ssize_t block_n,
		     const float *taps, Py_ssize_t taps_n, float *out, Py_ssize_t out_n, long up,
		     long down)
{
	const char *why = NULL;
	if (ext_n < 0 || block_n < 0 || taps_n < 0 || out_n < 0 ||
	    pp_resample(ext, (size_t)ext_n, block, (size_t)block_n, taps, (size_t)taps_n, out,
			(size_t)out_n, up, down, &why) < 0) {
		PyErr_Format(PyExc_ValueError, "resample: %s", why ? why : "negative sizes");
		return -1;
	}
	return 0;
}

static PyObject *resample(PyObject *self, PyObject *args)
{
	(void)self;
	PyObject *e, *b, *t, *o;
	long up, down;
	if (!PyArg_ParseTuple(args, "OOOOll", &e, &b, &t, &o, &up, &down))
		return NULL;
	buf_t ext, block, taps, out;
	block.held = taps.held = out.held = 0;
	PyObject *result = NULL;
	if (take(&ext, e, 4, 1, "ext") < 0 || take(&block, b, 4, 0, "block") < 0 ||
	    take(&taps, t, 4, 0, "taps") < 0 || take(&out, o, 4, 1, "out") < 0)
		goto done;
	if (polyphase(ext.view.buf, COUNT(ext), block.view.buf, COUNT(block), taps.view.buf,
		      COUNT(taps), out.view.buf, COUNT(out), up, down) < 0)
		goto done;
	result = Py_NewRef(Py_None);
done:
	drop(&ext);
	drop(&block);
	drop(&taps);
	drop(&out);
	return result;
}

/* ---- the device edges --------------------------------------------------------------- */

/* The meter's block statistics: peak |x| (max vs -min, as LevelMeter) and mean power. */
static void stats(const float *x, Py_ssize_t n, double *peak, double *power)
{
	float high = x[0], low = x[0];
	double sum = 0.0;
	for (Py_ssize_t i = 0; i < n; i++) {
		float v = x[i];
		if (v > high)
			high = v;
		if (v < low)
			low = v;
		sum += (double)v * (double)v;
	}
	*peak = (double)high > -(double)low ? (double)high : -(double)low;
	*power = sum / (double)n;
}

/* play(mix, ext, taps, up, down, device, out) -> (peak, power)
 *
 * PlaybackChain.process: resample the mix into `device` (float, device rate;
 * when ext is None the rates are equal and the mix is copied), measure it, and
 * write it as int16 to every channel of `out` ((frames, channels), C order). */
static PyObject *play(PyObject *self, PyObject *args)
{
	(void)self;
	PyObject *m, *e, *t, *d, *o;
	long up, down;
	if (!PyArg_ParseTuple(args, "OOOllOO", &m, &e, &t, &up, &down, &d, &o))
		return NULL;
	buf_t mix, ext, taps, dev, out;
	ext.held = taps.held = dev.held = out.held = 0;
	PyObject *result = NULL;
	if (take(&mix, m, 4, 0, "mix") < 0 || take(&dev, d, 4, 1, "device") < 0 ||
	    take(&out, o, 2, 1, "out") < 0)
		goto done;
	Py_ssize_t frames = COUNT(dev);
	if (frames <= 0 || COUNT(out) % frames) {
		PyErr_SetString(PyExc_ValueError, "play: out is not whole frames of the device block");
		goto done;
	}
	if (e == Py_None) {
		if (need(COUNT(mix), frames, "mix") < 0)
			goto done;
		memcpy(dev.view.buf, mix.view.buf, (size_t)frames * sizeof(float));
	} else {
		if (take(&ext, e, 4, 1, "ext") < 0 || take(&taps, t, 4, 0, "taps") < 0)
			goto done;
		if (polyphase(ext.view.buf, COUNT(ext), mix.view.buf, COUNT(mix), taps.view.buf,
			      COUNT(taps), dev.view.buf, frames, up, down) < 0)
			goto done;
	}
	const float *x = dev.view.buf;
	double peak, power;
	stats(x, frames, &peak, &power);
	Py_ssize_t ch = COUNT(out) / frames;
	int16_t *y = out.view.buf;
	for (Py_ssize_t i = 0; i < frames; i++) {
		int16_t s = pp_to_int16(x[i]);
		for (Py_ssize_t c = 0; c < ch; c++)
			y[i * ch + c] = s;
	}
	result = Py_BuildValue("(dd)", peak, power);
done:
	drop(&mix);
	drop(&ext);
	drop(&taps);
	drop(&dev);
	drop(&out);
	return result;
}

/* capture(buffer, channel, mono, ext, taps, up, down, resampled, pcm) -> (peak, power)
 *
 * CaptureChain.process: take one column of the interleaved int16 device period
 * into `mono` as float, measure it, and, when pcm is not None, resample it
 * (ext None: equal rates, a copy) into `resampled` and convert to int16 `pcm`.
 * With pcm None only the resampler's history is primed (nobody listens). */
static PyObject *capture(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	(void)self;
	if (nargs != 9) {
		PyErr_SetString(PyExc_TypeError, "capture takes 9 arguments");
		return NULL;
	}
	Py_ssize_t channel = PyLong_AsSsize_t(args[1]);
	long up = PyLong_AsLong(args[5]), down = PyLong_AsLong(args[6]);
	if (PyErr_Occurred())
		return NULL;
	buf_t in, mono, ext, taps, res, pcm;
	mono.held = ext.held = taps.held = res.held = pcm.held = 0;
	PyObject *result = NULL;
	if (take(&in, args[0], 2, 0, "buffer") < 0 || take(&mono, args[2], 4, 1, "mono") < 0)
		goto done;
	Py_ssize_t frames = COUNT(mono);
	if (frames <= 0 || COUNT(in) % frames || channel < 0 || channel >= COUNT(in) / frames) {
		PyErr_SetString(PyExc_ValueError, "capture: buffer is not frames × channels of mono");
		goto done;
	}
	Py_ssize_t ch = COUNT(in) / frames;
	const int16_t *src = in.view.buf;
	float *x = mono.view.buf;
	for (Py_ssize_t i = 0; i < frames; i++)
		x[i] = (float)src[i * ch + channel] * TO_FLOAT;
	double peak, power;
	stats(x, frames, &peak, &power);
	int listen = args[8] != Py_None;
	if (args[3] == Py_None) {
		if (listen) {
			if (take(&pcm, args[8], 2, 1, "pcm") < 0 || need(COUNT(pcm), frames, "pcm") < 0)
				goto done;
			int16_t *y = pcm.view.buf;
			for (Py_ssize_t i = 0; i < frames; i++)
				y[i] = pp_to_int16(x[i]);
		}
	} else {
		if (take(&ext, args[3], 4, 1, "ext") < 0)
			goto done;
		float *e = ext.view.buf;
		Py_ssize_t history = COUNT(ext) - frames;
		if (history < 0) {
			PyErr_SetString(PyExc_ValueError, "capture: ext shorter than the block");
			goto done;
		}
		if (!listen) { /* StreamResampler.prime: keep the newest `history` samples */
			if (history <= frames) {
				memcpy(e, x + frames - history, (size_t)history * sizeof(float));
			} else {
				memcpy(e + history, x, (size_t)frames * sizeof(float));
				memmove(e, e + frames, (size_t)history * sizeof(float));
			}
		} else {
			if (take(&taps, args[4], 4, 0, "taps") < 0 || take(&res, args[7], 4, 1, "resampled") < 0 ||
			    take(&pcm, args[8], 2, 1, "pcm") < 0 || need(COUNT(pcm), COUNT(res), "pcm") < 0)
				goto done;
			if (polyphase(e, COUNT(ext), x, frames, taps.view.buf, COUNT(taps), res.view.buf,
				      COUNT(res), up, down) < 0)
				goto done;
			const float *r = res.view.buf;
			int16_t *y = pcm.view.buf;
			for (Py_ssize_t i = 0; i < COUNT(res); i++)
				y[i] = pp_to_int16(r[i]);
		}
	}
	result = Py_BuildValue("(dd)", peak, power);
done:
	drop(&in);
	drop(&mono);
	drop(&ext);
	drop(&taps);
	drop(&res);
	drop(&pcm);
	return result;
}

static PyMethodDef methods[] = {
	{"mix_period", (PyCFunction)(void (*)(void))mix_period, METH_FASTCALL,
	 "mix_period(out, state, rings, unit, fade_out, fade_in, attack): Mixer.mix."},
	{"mix_source", (PyCFunction)(void (*)(void))mix_source, METH_FASTCALL,
	 "mix_source(mix, ring, start, count, offset, g0, g1, unit, fade): add one source."},
	{"gain", gain, METH_VARARGS, "gain(buf, unit, g0, g1): multiply by a ramp from g0 to g1."},
	{"limit", limit, METH_VARARGS,
	 "limit(mix, gain, threshold, release_step, knee, attack, unit) -> (gain, active)."},
	{"resample", resample, METH_VARARGS, "resample(ext, block, taps, out, up, down)."},
	{"play", play, METH_VARARGS,
	 "play(mix, ext, taps, up, down, device, out) -> (peak, power): resample, meter, to int16."},
	{"capture", (PyCFunction)(void (*)(void))capture, METH_FASTCALL,
	 "capture(buffer, channel, mono, ext, taps, up, down, resampled, pcm) -> (peak, power)."},
	{NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
	PyModuleDef_HEAD_INIT,
	.m_name = "_dsp",
	.m_doc = "The audio thread's per-period arithmetic in C; never releases the GIL.",
	.m_size = -1,
	.m_methods = methods,
};

PyMODINIT_FUNC PyInit__dsp(void)
{
	PyObject *m = PyModule_Create(&module);
	if (!m)
		return NULL;
	if (mix_layout_add(m) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	/* the channels' order mix_period takes: the core's (earcon first, so speech can
	 * start right after an earcon's gate) */
	PyObject *order = Py_BuildValue("(ssss)", "earcon", "speech", "content", "comms");
	int bad = !order || PyModule_AddObjectRef(m, "SOURCE_ORDER", order) < 0;
	Py_XDECREF(order); /* AddObjectRef took its own reference */
	if (bad) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
