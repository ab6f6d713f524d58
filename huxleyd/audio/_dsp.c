/* _dsp: the audio thread's per-period arithmetic, in C, with the GIL held.
 *
 * Every function here does short, bounded work on preallocated buffers (one
 * period: a few hundred to a few thousand samples) and returns. None releases
 * the GIL: numpy ufuncs over more than ~500 elements do, and with a busy Python
 * thread in the process each re-acquire costs up to the 5 ms switch interval,
 * dozens of times a period. Here a period's mixing is a handful of calls that
 * keep the GIL from start to end.
 *
 * The arithmetic is the numpy reference's (huxleyd/audio/mixer.py, limiter.py,
 * resample.py, chains.py), float32 operation for operation, so the output is
 * bit-identical where numpy's order is reproduced (gains, fades, mixing, the
 * resampler's row sums, the int16 conversion) and within float tolerance where
 * it is not (the limiter's tanh, the meter's power). Built with
 * -ffp-contract=off: a fused multiply-add would round differently from numpy.
 *
 * Buffers come through the buffer protocol (numpy arrays, C-contiguous); the
 * caller (huxleyd/audio/dsp.py) owns their shapes, this file checks their sizes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "_mixcore.h"

/* ---- buffers ------------------------------------------------------------------------ */

typedef struct {
	Py_buffer view;
	int held;
} buf_t;

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
static int take(buf_t *b, PyObject *obj, Py_ssize_t itemsize, int writable, const char *name)
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

static void drop(buf_t *b)
{
	if (b->held)
		PyBuffer_Release(&b->view);
	b->held = 0;
}

#define COUNT(b) ((b).view.len / (b).view.itemsize)

static int need(Py_ssize_t have, Py_ssize_t want, const char *name)
{
	if (have < want) {
		PyErr_Format(PyExc_ValueError, "%s: needs %zd items, has %zd", name, want, have);
		return -1;
	}
	return 0;
}

/* numpy's float32 add.reduce over one contiguous row: its pairwise sum (a plain
 * loop under 8 items, 8 accumulators up to 128, halves above). Same order, same bits. */
static float pairwise(const float *a, Py_ssize_t n)
{
	if (n < 8) {
		float res = 0.0f;
		for (Py_ssize_t i = 0; i < n; i++)
			res += a[i];
		return res;
	}
	if (n <= 128) {
		float r[8];
		Py_ssize_t i;
		for (int k = 0; k < 8; k++)
			r[k] = a[k];
		for (i = 8; i < n - (n % 8); i += 8)
			for (int k = 0; k < 8; k++)
				r[k] += a[i + k];
		float res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
		for (; i < n; i++)
			res += a[i];
		return res;
	}
	Py_ssize_t half = n / 2;
	half -= half % 8;
	return pairwise(a, half) + pairwise(a + half, n - half);
}

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

/* sum over t of x[-t] * w[t], products summed in numpy's pairwise order (see pairwise) */
static float dot_pairwise(const float *x, const float *w, Py_ssize_t n)
{
	if (n < 8 || n > 128) {
		float row[512];
		for (Py_ssize_t t = 0; t < n; t++)
			row[t] = x[-t] * w[t];
		return pairwise(row, n);
	}
	float r[8];
	Py_ssize_t i;
	for (int k = 0; k < 8; k++)
		r[k] = x[-k] * w[k];
	for (i = 8; i < n - (n % 8); i += 8)
		for (int k = 0; k < 8; k++)
			r[k] += x[-(i + k)] * w[i + k];
	float res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
	for (; i < n; i++)
		res += x[-i] * w[i];
	return res;
}

/* resample(ext, block, taps, out, up, down): StreamResampler.process.
 *
 * ext holds `history` carried input samples, then room for the block; taps is
 * (block_out, per_phase) with each output's taps, newest input first. Output j
 * is the row sum of taps[j, t] * ext[newest(j) - t + history]. */
static int polyphase(float *ext, Py_ssize_t ext_n, const float *block, Py_ssize_t block_n,
		     const float *taps, Py_ssize_t taps_n, float *out, Py_ssize_t out_n, long up,
		     long down)
{
	if (up <= 0 || down <= 0 || out_n <= 0 || taps_n % out_n) {
		PyErr_SetString(PyExc_ValueError, "resample: bad rates or taps");
		return -1;
	}
	Py_ssize_t per = taps_n / out_n;
	Py_ssize_t history = ext_n - block_n;
	if (per > 512 || history != per - 1 || (Py_ssize_t)(((long long)(out_n - 1) * down) / up) >= block_n) {
		PyErr_SetString(PyExc_ValueError, "resample: history and block do not match the taps");
		return -1;
	}
	memcpy(ext + history, block, (size_t)block_n * sizeof(float));
	for (Py_ssize_t j = 0; j < out_n; j++) {
		const float *x = ext + (Py_ssize_t)(((long long)j * down) / up) + history; /* newest */
		out[j] = dot_pairwise(x, taps + j * per, per);
	}
	if (history)
		memmove(ext, ext + block_n, (size_t)history * sizeof(float));
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

/* float32 → int16 the way float_to_int16_into does it: scale, round half to even, clip */
static inline int16_t to_int16(float v)
{
	v = v * 32768.0f;
	v = rintf(v);
	if (v < -32768.0f)
		v = -32768.0f;
	else if (v > 32767.0f)
		v = 32767.0f;
	return (int16_t)v;
}

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
		int16_t s = to_int16(x[i]);
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
				y[i] = to_int16(x[i]);
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
				y[i] = to_int16(r[i]);
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

static PyObject *mix_period(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
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

static PyMethodDef methods[] = {
	{"mix_period", (PyCFunction)(void (*)(void))mix_period, METH_FASTCALL,
	 "mix_period(out, channels, mixer, rings, unit, fade_out, fade_in, attack): Mixer.mix."},
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
	if (intern_names(source_fields, N_SOURCE_FIELDS) < 0 ||
	    intern_names(mixer_fields, N_MIXER_FIELDS) < 0 ||
	    !(RING = PyUnicode_InternFromString("ring")) ||
	    !(LIMITER = PyUnicode_InternFromString("limiter")) ||
	    !(PLAYOUT = PyUnicode_InternFromString("playout")) ||
	    !(SKIPS = PyUnicode_InternFromString("skips")) ||
	    !(RECORD = PyUnicode_InternFromString("record"))) {
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
