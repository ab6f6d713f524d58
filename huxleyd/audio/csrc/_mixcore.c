/* _mixcore: one period of the mixer in plain C. See _mixcore.h for the contract;
 * each function names the oracle's method it reproduces (tests/oracles/numpy_mixer.py,
 * limiter.py). */
#include "_mixcore.h"

#include <math.h>
#include <string.h>

static const float TO_FLOAT = 1.0f / 32768.0f;

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

void mc_add_source(float *mix, const int16_t *ring, uint64_t cap, uint64_t start, uint64_t count,
		   uint64_t offset, double g0, double g1, const float *unit, const float *fade)
{
	float constant = (float)g1, step = (float)(g1 - g0), base = (float)g0;
	int ramp = g0 != g1 || fade != NULL;
	for (uint64_t k = 0; k < count; k++) {
		uint64_t i = offset + k;
		uint64_t at = start + k;
		if (at >= cap)
			at -= cap;
		float x = (float)ring[at] * TO_FLOAT;
		if (ramp) { /* numpy: gains = unit * step + base; gains *= fade; tmp *= gains */
			float g = unit[i] * step;
			g = g + base;
			if (fade)
				g = g * fade[i];
			x = x * g;
		} else {
			x = x * constant;
		}
		mix[i] = mix[i] + x;
	}
}

/* buf *= shape * (g1 - g0) + g0, in float32 (numpy's ramp, even when g0 == g1) */
static void ramp_in_place(float *buf, const float *shape, uint64_t n, double g0, double g1)
{
	float step = (float)(g1 - g0), base = (float)g0;
	for (uint64_t i = 0; i < n; i++) {
		float g = shape[i] * step;
		g = g + base;
		buf[i] = buf[i] * g;
	}
}

void mc_gain(float *buf, const float *unit, uint64_t n, double g0, double g1)
{
	if (g0 != g1) {
		ramp_in_place(buf, unit, n, g0, g1);
		return;
	}
	float g = (float)g1;
	for (uint64_t i = 0; i < n; i++)
		buf[i] = buf[i] * g;
}

static float peak_of(const float *x, uint64_t n)
{
	float peak = 0.0f;
	for (uint64_t i = 0; i < n; i++) {
		float a = fabsf(x[i]);
		if (a > peak || isnan(a)) /* numpy's max propagates NaN */
			peak = a;
	}
	return peak;
}

double mc_limit(float *x, uint64_t n, double start, double threshold, double release_step,
		double knee, const float *attack, const float *unit, int *active)
{
	double peak = n ? (double)peak_of(x, n) : 0.0;
	double target = peak <= threshold ? 1.0 : threshold / peak;
	double end;
	if (target < start) {
		end = target;
	} else {
		end = start * release_step;
		if (target < end)
			end = target;
		if (end > 1.0)
			end = 1.0;
	}
	*active = 0;
	if (start != 1.0 || end != 1.0) {
		*active = 1;
		ramp_in_place(x, end < start ? attack : unit, n, start, end);
		peak *= start > end ? start : end;
	}
	if (peak > threshold) {
		*active = 1;
		/* bent = knee * tanh(excess / knee): the threshold's slope, asymptote = ceiling */
		float thr = (float)threshold, k = (float)knee, inv = (float)(1.0 / knee);
		for (uint64_t i = 0; i < n; i++) {
			float excess = fabsf(x[i]) - thr;
			if (!(excess > 0.0f))
				excess = excess < 0.0f ? 0.0f : excess; /* max(excess, 0), NaN kept */
			float bent = excess * inv;
			bent = tanhf(bent);
			bent = bent * k;
			excess = excess - bent;
			x[i] = x[i] - copysignf(excess, x[i]);
		}
	}
	return end;
}

static double db_to_gain(double db)
{
	return db == -INFINITY ? 0.0 : pow(10.0, db / 20.0);
}

/* SourceChannel._step_gains: advance the user and duck gains one period; (start, end) */
static void step_gains(const mc_mixer *m, mc_source *s, double *g0, double *g1)
{
	*g0 = s->gain * db_to_gain(s->duck_db);
	s->gain = s->req_gain;
	double target = s->req_ducked ? m->depth_db : 0.0;
	if (s->duck_db > target) {
		double down = s->duck_db - m->attack_step_db;
		s->duck_db = down > target ? down : target;
	} else if (s->duck_db < target) {
		double up = s->duck_db + m->release_step_db;
		s->duck_db = up < target ? up : target;
	}
	*g1 = s->gain * db_to_gain(s->duck_db);
}

/* SourceChannel._transport: how many samples to pull (-1: none at all) and which fade;
 * *flush set when a flush is due after the pull (its fade-out is pulled first). */
static int64_t transport(const mc_mixer *m, mc_source *s, uint64_t room, const float **fade,
			 int *flush)
{
	*fade = NULL;
	*flush = 0;
	if (s->req_flush_seq != s->flush_seq) {
		*flush = 1;
		if (s->paused)
			return -1;
		*fade = m->fade_out;
		return (int64_t)min_u64(m->ramp, room);
	}
	if (s->paused) {
		if (s->req_paused)
			return -1;
		s->paused = 0;
		*fade = m->fade_in;
		return (int64_t)room;
	}
	if (s->req_paused) {
		s->paused = 1;
		*fade = m->fade_out;
		return (int64_t)min_u64(m->ramp, room);
	}
	return (int64_t)room;
}

/* SourceChannel._pulled and _flush: bookkeeping after pulling `got` of `count` wanted */
static void pulled(mc_source *s, uint64_t got, int64_t count, int flush)
{
	if (count >= 0) {
		s->pull_count = got;
		if (got < (uint64_t)count && s->flowing)
			s->dry_count++;
		s->flowing = got == (uint64_t)count && got > 0;
	}
	if (!flush)
		return;
	s->flush_seq = s->req_flush_seq;
	uint64_t target = min_u64(s->req_flush_to, s->write_pos); /* SampleRing.skip_to */
	if (target > s->read_pos) {
		s->skip_from = s->read_pos;
		s->skip_to = target;
		s->read_pos = target;
	}
	s->flowing = 0;
}

/* SourceChannel.render: pull this period's samples (from `offset`, at most `limit`
 * when limit >= 0), apply the gains and add them into `mix`. */
static void render(const mc_mixer *m, mc_source *s, float *mix, uint64_t offset, int64_t limit)
{
	s->pull_start = s->read_pos;
	s->pull_offset = offset;
	s->pull_count = 0;
	s->skip_from = s->skip_to = 0;
	uint64_t room = m->period - offset;
	if (limit >= 0 && (uint64_t)limit < room)
		room = (uint64_t)limit;
	double g0, g1;
	step_gains(m, s, &g0, &g1); /* the gains first, as the Python path */
	const float *fade;
	int flush;
	int64_t count = transport(m, s, room, &fade, &flush);
	if (count <= 0) {
		pulled(s, 0, count, flush);
		return;
	}
	uint64_t got = min_u64((uint64_t)count, s->held ? 0 : s->write_pos - s->read_pos);
	if (got > 0) {
		mc_add_source(mix, s->samples, s->capacity, s->read_pos % s->capacity, got, offset, g0,
			      g1, m->unit, fade);
		s->read_pos += got;
	}
	pulled(s, got, count, flush);
}

/* Mixer._speech_window: where speech may play this period, given a pending earcon
 * gate: *offset, and a limit (-1: none). */
static int64_t speech_window(mc_mixer *m, uint64_t *offset)
{
	mc_source *speech = &m->src[MC_SPEECH], *earcon = &m->src[MC_EARCON];
	*offset = 0;
	if (m->req_gate_seq != m->gate_seq) {
		m->gate_seq = m->req_gate_seq;
		if (!m->gate_active) /* speech still flowing: the gate is where asyncio saw it */
			m->gate_speech_pos = speech->pull_count > 0 ? m->req_gate_speech_pos
								    : speech->read_pos;
		m->gate_active = 1;
		m->gate_earcon_end = m->req_gate_earcon_end;
	}
	if (!m->gate_active)
		return -1;
	uint64_t before_gate = m->gate_speech_pos > speech->read_pos
				       ? m->gate_speech_pos - speech->read_pos
				       : 0;
	if (earcon->read_pos < m->gate_earcon_end) /* still playing: hold queued speech */
		return (int64_t)before_gate;
	m->gate_active = 0;
	if (before_gate > 0 || earcon->pull_start >= m->gate_earcon_end)
		return -1;
	/* the earcon ended inside this period: speech starts on the next sample */
	uint64_t played = min_u64(m->gate_earcon_end - earcon->pull_start, earcon->pull_count);
	*offset = earcon->pull_offset + played;
	return -1;
}

void mc_mix_period(mc_mixer *m, float *out)
{
	memset(out, 0, (size_t)m->period * sizeof(float));
	render(m, &m->src[MC_EARCON], out, 0, -1);
	uint64_t offset;
	int64_t limit = speech_window(m, &offset);
	render(m, &m->src[MC_SPEECH], out, offset, limit);
	render(m, &m->src[MC_CONTENT], out, 0, -1);
	render(m, &m->src[MC_COMMS], out, 0, -1);
	double start = m->master, end = m->req_master; /* Mixer._apply_master */
	m->master = end;
	if (start != end || end != 1.0)
		mc_gain(out, m->unit, m->period, start, end);
	int active;
	m->limiter_gain = mc_limit(out, m->period, m->limiter_gain, m->threshold, m->release_step,
				   m->knee, m->attack, m->unit, &active);
	m->limiter_active += (uint64_t)active;
}
