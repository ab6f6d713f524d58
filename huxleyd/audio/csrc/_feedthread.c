/* _feedthread: the C feeder's thread, its requests seqlock and its report log. See
 * _feedthread.h for the picture and the ordering of every atomic.
 */
#include "_feedthread.h" /* first: Python.h before the standard headers */
#include "_polyphase.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <time.h>

/* ---- requests: a seqlock of 64-bit words ------------------------------------------------ */

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
void feeder_pack_requests(const mc_mixer *m, uint64_t *w)
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


/* The seqlock's writer (see req_seq): the only store to req_seq and req_words. */
void feeder_post_requests(Feeder *f, const uint64_t *words)
{
	uint32_t seq = atomic_load_explicit(&f->req_seq, memory_order_relaxed);
	atomic_store_explicit(&f->req_seq, seq + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	for (int i = 0; i < RQ_WORDS; i++)
		atomic_store_explicit(&f->req_words[i], words[i], memory_order_relaxed);
	atomic_store_explicit(&f->req_seq, seq + 2, memory_order_release);
}

void feeder_wake(Feeder *f)
{
	atomic_fetch_add_explicit(&f->posted, 1, memory_order_release);
	sem_post(&f->wake);
}

/* ---- the thread ------------------------------------------------------------------------- */

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

/* SourceChannel.idle: nothing to play and nothing moving for source s (a held start
 * has nothing to play yet: the feeder wakes for its release, see hold_deadline) */
static int source_idle(const mc_mixer *m, const mc_source *s)
{
	if (s->req_flush_seq != s->flush_seq || (s->req_paused != 0) != (s->paused != 0))
		return 0;
	if (s->gain != s->req_gain || s->duck_db != (s->req_ducked ? m->depth_db : 0.0))
		return 0;
	return s->paused || s->held || s->write_pos == s->read_pos;
}

/* ---- the playout buffer ------------------------------------------------------------------
 *
 * A reply starts only when it can keep going. A holding source that ran dry (or never
 * played) is armed: its next samples are held (mc_source.held: the mixer pulls nothing,
 * a flush still drops them) until the ring holds the target's worth of audio, or the
 * producer said its audio ends there (SourceRing.end_pos: a short reply plays at once),
 * or the first of them waited hold_cap_factor times the target (a producer that never
 * marks its end; twice, so a start the event loop is slow to feed still waits for
 * its audio rather than playing a first delta alone into a hole). A provider streams a reply ahead
 * of real time, so on a calm machine the target fills within a few ms of the first
 * delta; on a starved one (a busy Python thread: the event loop stalls 100-200 ms
 * between two deltas) the hold is what keeps the first delta from playing alone into
 * a hole.
 *
 * The target follows the feed's jitter on this device, as a jitter buffer does: a
 * source that ran dry before its end (end_pos behind the ring: a late source) and then
 * went on within HOLE_WINDOW_NS grows it to 1.5 times that lateness (up to
 * hold_max_ns); a hold released after hold_calm_ns of watched feed without a hole
 * may shrink it, by at most a quarter (down to hold_min_ns), and only into the margin
 * that stretch did not use. Watched feed: time while a reply plays and more of it is
 * still to come (released, its end not marked), the only time a late feed is heard;
 * each time more arrives then, the feeder notes how little was still queued
 * (hold_watch: the low water). A feed that made the reply wait 200 ms drew a 300 ms
 * target down to 100 ms: the target stays at least 1.5 times those 200 ms, as a grow
 * would set it. Two shrinks that lost holes before: a wall-clock minute counted as calm
 * when its stalls fell between replies (short replies are fed for a tenth of a second
 * after their hold, and a kitchen speaker is quiet most of the hour), and a shrink by
 * a quarter whatever margin the stalls had used (3 of 50 replies in bench_replies at a
 * Pi 4's share, then 1 of 50 with the low water over a wall-clock minute). */

/* A dry spell longer than this, end marked or not, is a pause between two replies, not
 * a late delta: no listener hears a second of silence as a hole inside one reply, and
 * counting it would grow the target to its ceiling after every unmarked reply. */
#define HOLE_WINDOW_NS 1000000000LL

int64_t feeder_now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void hold_grow(Feeder *f, int64_t late)
{
	int64_t target = atomic_load_explicit(&f->hold_target_ns, memory_order_relaxed);
	int64_t want = late + late / 2;
	if (want > f->hold_max_ns)
		want = f->hold_max_ns;
	if (want > target) {
		atomic_store_explicit(&f->hold_target_ns, want, memory_order_relaxed);
		atomic_fetch_add_explicit(&f->grows, 1, memory_order_relaxed);
	}
	f->watched_ns = 0;
	f->low_water_ns = INT64_MAX;
}

/* See _feedthread.h. */
int64_t feeder_hold_shrunk(int64_t target, int64_t low_water, int64_t floor)
{
	int64_t want = target - target / 4;
	if (low_water < target) {
		int64_t dip = target - (low_water > 0 ? low_water : 0);
		if (dip + dip / 2 > want)
			want = dip + dip / 2;
	}
	if (want < floor)
		want = floor;
	return want < target ? want : target;
}

static void hold_shrink(Feeder *f)
{
	if (f->watched_ns < f->hold_calm_ns)
		return;
	int64_t target = atomic_load_explicit(&f->hold_target_ns, memory_order_relaxed);
	int64_t less = feeder_hold_shrunk(target, f->low_water_ns, f->hold_min_ns);
	if (less < target) {
		atomic_store_explicit(&f->hold_target_ns, less, memory_order_relaxed);
		atomic_fetch_add_explicit(&f->shrinks, 1, memory_order_relaxed);
	}
	f->watched_ns = 0; /* the next stretch is judged on its own feed */
	f->low_water_ns = INT64_MAX;
}

/* Before hold_step: for each playing (released) holding source that got more audio
 * since the last look, how much was still queued just before it came (mixer samples
 * at 24 kHz, as ns): the least of these since the last step of the target is the low
 * water. Seen at the feeder's pace, so a dip reads up to one of its waits deeper than
 * it was (on the safe side). The end of a reply is no dip: nothing more arrives. The
 * time since the last look counts as watched while such a source's end is not marked. */
static void hold_watch(Feeder *f, int64_t now)
{
	int fed = 0;
	for (int i = 0; i < MC_SOURCES; i++) {
		mc_source *s = &f->m.src[i];
		uint64_t seen = f->seen_wpos[i];
		f->seen_wpos[i] = s->write_pos;
		if (!f->hold_on[i] || f->armed[i] || s->paused)
			continue;
		if (atomic_load_explicit(&f->rings[i]->endpos, memory_order_acquire) < s->write_pos)
			fed = 1;
		if (s->write_pos == seen)
			continue;
		uint64_t queued = seen > s->read_pos ? seen - s->read_pos : 0;
		int64_t ns = (int64_t)(queued * 1000000u / 24u);
		if (ns < f->low_water_ns)
			f->low_water_ns = ns;
	}
	if (fed && f->watch_at)
		f->watched_ns += now - f->watch_at;
	f->watch_at = now;
}

/* Before the period's mix: which armed sources stay held (mc_source.held). */
static void hold_step(Feeder *f, int64_t now)
{
	int64_t target = atomic_load_explicit(&f->hold_target_ns, memory_order_relaxed);
	uint64_t want = (uint64_t)target * 24u / 1000000u; /* mixer samples (24 kHz) */
	f->hold_deadline = 0;
	for (int i = 0; i < MC_SOURCES; i++) {
		mc_source *s = &f->m.src[i];
		s->held = 0;
		if (!f->hold_on[i] || !f->armed[i])
			continue;
		if (s->write_pos == s->read_pos) { /* nothing yet (or a flush dropped it) */
			f->held_since[i] = 0;
			continue;
		}
		uint64_t end = atomic_load_explicit(&f->rings[i]->endpos, memory_order_acquire);
		if (f->held_since[i] == 0) { /* the first samples after a start or a dry spell */
			f->held_since[i] = now;
			atomic_fetch_add_explicit(&f->holds, 1, memory_order_relaxed);
			if (f->dry_at[i] && end >= s->read_pos) /* that dry spell was its end after all */
				f->dry_at[i] = 0;
			if (f->dry_at[i] && now - f->dry_at[i] > HOLE_WINDOW_NS)
				f->dry_at[i] = 0; /* a pause between replies whose end nobody marked */
			if (f->dry_at[i])
				hold_grow(f, now - f->dry_at[i]);
		}
		int64_t waited = now - f->held_since[i];
		int full = s->write_pos - s->read_pos >= want, ended = end >= s->write_pos;
		if (full || ended || waited >= f->hold_cap_factor * target) {
			atomic_fetch_add_explicit(full ? &f->released_full
						       : ended ? &f->released_end : &f->released_late,
						  1, memory_order_relaxed);
			f->armed[i] = 0;
			f->held_since[i] = 0;
			if (waited > atomic_load_explicit(&f->hold_ns_max, memory_order_relaxed))
				atomic_store_explicit(&f->hold_ns_max, waited, memory_order_relaxed);
			if (f->dry_at[i]) {
				atomic_fetch_add_explicit(&f->holes, 1, memory_order_relaxed);
				atomic_fetch_add_explicit(&f->hole_ns, now - f->dry_at[i],
							  memory_order_relaxed);
				f->dry_at[i] = 0;
			} else {
				hold_shrink(f);
			}
			continue;
		}
		s->held = 1;
		int64_t due = f->held_since[i] + f->hold_cap_factor * target;
		if (f->hold_deadline == 0 || due < f->hold_deadline)
			f->hold_deadline = due;
	}
}

/* After the period's mix: a holding source the mixer found dry is armed again; when
 * the producer had not said its audio ended there, it ran dry early (a late source). */
static void hold_rearm(Feeder *f, int64_t now)
{
	for (int i = 0; i < MC_SOURCES; i++) {
		mc_source *s = &f->m.src[i];
		if (!f->hold_on[i] || f->armed[i])
			continue;
		if (s->skip_to > s->skip_from) { /* a flush: what follows is a new start */
			f->armed[i] = 1;
			f->dry_at[i] = 0;
			continue;
		}
		if (s->paused || s->flowing || s->read_pos != s->write_pos)
			continue;
		f->armed[i] = 1;
		uint64_t end = atomic_load_explicit(&f->rings[i]->endpos, memory_order_acquire);
		f->dry_at[i] = end >= s->write_pos ? 0 : now;
	}
}

/* See _feedthread.h. */
unsigned feeder_holding_of(const mc_mixer *m, const unsigned *bits, int *idle)
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
	return feeder_holding_of(&f->m, f->expect_bit, idle);
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
	int64_t now = feeder_now_ns();
	hold_watch(f, now);
	hold_step(f, now);
	int cutting = cut != atomic_load_explicit(&f->acked, memory_order_relaxed);
	int idle;
	unsigned mask = holding(f, &idle);
	/* idle after a silent period was mixed: the resampler's history is zeros too */
	if (idle && f->idle_streak > 0 && !cutting) {
		skip_idle(&f->m);
		hold_rearm(f, now);
		rt_output_expect(f->output, 0);
		if (f->hold_deadline) { /* a held start: not idle, and released on time */
			atomic_store_explicit(&f->idle_at, 0, memory_order_release);
			int64_t left = f->hold_deadline - now;
			return left > 1000000L ? (long)left : 1000000L;
		}
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
	hold_rearm(f, now);
	f->idle_streak = idle ? f->idle_streak + 1 : 0;
	if (cutting) { /* that mix took the cut's flush in: the callback plays from here */
		rt_output_resume(f->output, cut, rt_output_written(f->output));
		atomic_store_explicit(&f->acked, cut, memory_order_relaxed);
	}
	mask = holding(f, &idle);
	rt_output_expect(f->output, mask);
	return 0; /* at once: up to the lead */
}

void *feeder_run(void *arg)
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

/* ---- the report log's consumer side (Python, GIL held; see report_tail) --------------- */

uint64_t feeder_reports_unpopped(Feeder *f, uint64_t *tail)
{
	*tail = atomic_load_explicit(&f->report_tail, memory_order_relaxed);
	return atomic_load_explicit(&f->report_head, memory_order_acquire) - *tail;
}

void feeder_report_copy(const Feeder *f, uint64_t index, double *words, int16_t *pcm)
{
	uint64_t slot = index % f->slots;
	memcpy(words, &f->reports[slot], sizeof(report_t));
	if (pcm)
		memcpy(pcm, f->report_pcm + slot * f->m.period, (size_t)f->m.period * sizeof(int16_t));
}

int feeder_report_pop(Feeder *f)
{
	uint64_t tail;
	if (feeder_reports_unpopped(f, &tail) == 0)
		return -1;
	atomic_store_explicit(&f->report_tail, tail + 1, memory_order_release);
	return 0;
}
