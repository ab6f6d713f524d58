/* _feedthread: the C feeder's thread (part of the _rt extension): its period loop, the
 * requests seqlock it reads and the report log it writes.
 *
 * The thread mixes the four SourceRings (_sourcering.h) with the mixer core
 * (_mixcore.c), resamples to the device rate (_polyphase.c), converts to int16 and
 * writes into the speaker Output's ring (_rtout.c, through the rt_output_* hooks of
 * _rt.h) up to `lead` frames ahead of the DAC; it acknowledges cuts (barge-in), tells
 * the callback which sources hold audio (expect) and logs one report per period for
 * Python's playout clock. Its loop (feeder_run) is the real-time contract: no
 * allocation, no lock, no Python, no logging; it waits only in sem_clockwait on
 * CLOCK_MONOTONIC (a request or a ring write posts the semaphore; sem_post never
 * blocks the poster).
 *
 * Python's side (the Feeder type in _feeder.c: it starts and joins the thread) calls
 * the functions declared below with the GIL held. Every atomic field of the Feeder
 * says, where it is declared, who writes it, with which order, and which load pairs.
 */
#ifndef HUXLEYD_FEEDTHREAD_H
#define HUXLEYD_FEEDTHREAD_H

#include "_rt.h" /* first: Python.h before the standard headers */
#include "_mixcore.h"
#include "_sourcering.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>

/* The request words: per source, then the mixer's (the one list: feeder_pack_requests). */
enum { RQ_GAIN, RQ_DUCKED, RQ_PAUSED, RQ_FLUSH_SEQ, RQ_FLUSH_TO, RQ_PER_SOURCE };
enum { RQ_MASTER = RQ_PER_SOURCE * MC_SOURCES, RQ_GATE_SEQ, RQ_GATE_END, RQ_GATE_POS, RQ_WORDS };

/* One mixed period, as Python's playout clock, meters and echo canceller need it. The
 * layout Python reads (peek(), pending()) is REPORT_HEAD then each REPORT_SOURCE field
 * for the four sources in SOURCE_ORDER: the module exports both tuples, the only list
 * of them. */
#define REPORT_HEAD_WORDS 5
#define REPORT_SOURCE_WORDS 6
typedef struct {
	double head[REPORT_HEAD_WORDS]; /* dev_start, limiter_active, peak, power, holding */
	double src[REPORT_SOURCE_WORDS][MC_SOURCES];
} report_t;
#define REPORT_WORDS (REPORT_HEAD_WORDS + REPORT_SOURCE_WORDS * MC_SOURCES)
_Static_assert(sizeof(report_t) == REPORT_WORDS * sizeof(double), "a report is its words");

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
	/* The playout buffer (a jitter buffer at each start: see hold_step in
	 * _feedthread.c). Configuration, fixed at __init__: which sources hold
	 * (hold_on), the target's start, floor and ceiling and the calm stretch after which
	 * it shrinks one step (ns). The rest is the feeder thread's own state. */
	int hold_on[MC_SOURCES];
	int64_t hold_min_ns, hold_max_ns, hold_calm_ns, hold_cap_factor;
	int armed[MC_SOURCES];         /* 1: the next audio of this source is held */
	int64_t held_since[MC_SOURCES]; /* when the held audio was first seen (0: none yet) */
	int64_t dry_at[MC_SOURCES];     /* when it ran dry before its end (0: at its end) */
	int64_t watched_ns; /* feed watched since the target's last step (see hold_watch) */
	int64_t watch_at;   /* the last look (0: none yet) */
	uint64_t seen_wpos[MC_SOURCES]; /* each ring's write position at the last look */
	int64_t low_water_ns; /* the least audio queued when more came, since the last step */
	int64_t hold_deadline;          /* the earliest held start's release (0: none held) */
	/* Feeder -> Python (status()), relaxed both ways (counters, no data hangs on them):
	 *   hold_target_ns (the target now), holds (starts held), holes (a source ran dry
	 *   before its end and then went on: a late source), hole_ns (their summed
	 *   silence, dry to the next sample played), grows/shrinks (target steps),
	 *   hold_ns_max (the longest hold). */
	_Atomic int64_t hold_target_ns, hole_ns, hold_ns_max;
	_Atomic uint64_t holds, holes, grows, shrinks;
	/* how each hold ended: its target queued, its end marked, or its time cap */
	_Atomic uint64_t released_full, released_end, released_late;
	/* Requests: a seqlock. Written by Python only (feeder_post_requests, GIL held: one
	 * writer at a time): req_seq odd (relaxed store, then a release fence), the words
	 * (relaxed), req_seq even (release). Read by the feeder only (take_requests):
	 * req_seq (acquire, pairs with the even release store), the words (relaxed), an
	 * acquire fence (pairs with the writer's release fence), req_seq again (relaxed);
	 * it keeps its last snapshot when the two differ or are odd after a few tries:
	 * the request is then taken one period later, never torn and never waited for. */
	_Atomic uint32_t req_seq;
	_Atomic uint64_t req_words[RQ_WORDS];
	uint32_t req_taken; /* the feeder's: the req_seq of its snapshot */
	/* Reports: a single-producer/single-consumer log.
	 * report_head: written by the feeder only (log_report): it fills slot head % slots,
	 *   then stores head + 1 (release). Python's loads (feeder_reports_unpopped,
	 *   acquire) pair, so a slot is read only after its data.
	 * report_tail: written by Python only (feeder_report_pop, GIL held) with a release
	 *   store once the oldest report was recorded; the feeder's acquire load in
	 *   log_report pairs, so it never overwrites a slot still to be read. Python's own
	 *   loads of it are relaxed (it is their writer).
	 *   Since tail moves only with the GIL held, peek, pending and pop never interleave:
	 *   a report stays in the log until Python recorded it, and a cut's pending() sees
	 *   every report not yet in the playout clock's history.
	 * reports_lost: the feeder's, relaxed (a counter): a full log, the period plays and
	 *   is not logged. */
	report_t *reports;
	int16_t *report_pcm; /* slots * period mixer samples: the mix, for the echo canceller */
	uint64_t slots;
	_Atomic uint64_t report_head, report_tail, reports_lost;
	/* Feeder -> Python, relaxed both ways (counters or flags: no data hangs on them):
	 *   acked (the last cut acknowledged), periods (mixed), full (times a period waited
	 *   because the Output ring had no room for all of it: nothing is mixed that cannot
	 *   be written), overflow (frames a write refused anyway: a bug, counted), policy
	 *   (the thread's scheduling policy, -1 before it ran; seq_cst, once).
	 * posted: written by Python only (feeder_wake, GIL held): fetch_add (release) by
	 *   every request() and wake(), before the sem_post. The feeder's acquire load at
	 *   the start of a step pairs, so the step sees the request or ring write before it.
	 * idle_at: written by the feeder only (release): posted + 1 as it loaded it at the
	 *   start of a step that found nothing to do, 0 after a step that mixed. Python's
	 *   idle() loads it (acquire, pairs) and then posted: idle is idle_at == posted + 1,
	 *   so a request or ring write since that step (which the feeder has not seen yet)
	 *   makes it false, and the audio thread never sleeps on a stale "idle" while the
	 *   feeder is about to play. */
	_Atomic uint32_t acked;
	_Atomic uint64_t posted, idle_at;
	_Atomic uint64_t periods, full, overflow;
	_Atomic int policy;
	/* stop: written by Python only (start: 0, stop_thread: 1, release, then sem_post);
	 *   the feeder's acquire load at the top of each loop pairs. The semaphore itself
	 *   orders nothing the feeder relies on: it only ends a wait early. */
	_Atomic int stop;
	sem_t wake;
	int sem_ready;
	pthread_t thread;
	int running; /* the thread was started and not yet joined (GIL held: Python's) */
} Feeder;

/* The request fields of a mixer struct as RQ_WORDS words (the one list of them). */
void feeder_pack_requests(const mc_mixer *m, uint64_t *words);

/* Publish RQ_WORDS request words through the seqlock (GIL held: one writer). */
void feeder_post_requests(Feeder *f, const uint64_t *words);

/* A request or a ring write: bump posted (release), then post the semaphore. */
void feeder_wake(Feeder *f);

/* Mixer.holding as the Output's expect bits (bits[i] for core source i) and
 * Mixer.idle (*idle). tests/audio/test_feeder.py compares both with the Python. */
unsigned feeder_holding_of(const mc_mixer *m, const unsigned *bits, int *idle);

/* The playout buffer's target after a calm stretch (ns): at most a quarter less, and
 * never under 1.5 times the deepest dip the stretch saw (target - low_water: the
 * longest the feed made a playing reply wait, which the target just covered; low_water
 * INT64_MAX: no reply was fed in pieces, nothing to cover), nor under floor. */
int64_t feeder_hold_shrunk(int64_t target, int64_t low_water, int64_t floor);

/* CLOCK_MONOTONIC in ns (the playout buffer's clock). */
int64_t feeder_now_ns(void);

/* The thread's body (pthread_create). */
void *feeder_run(void *arg);

/* The report log's consumer side (GIL held). Reports not yet popped; *tail is the
 * oldest one's index. */
uint64_t feeder_reports_unpopped(Feeder *f, uint64_t *tail);

/* Copy report `index` (unpopped) as REPORT_WORDS doubles, and its mix into `pcm`
 * (a period of int16) unless pcm is NULL. */
void feeder_report_copy(const Feeder *f, uint64_t index, double *words, int16_t *pcm);

/* The oldest report was recorded: its slot is the feeder's again. 0, or -1 when the
 * log is empty. */
int feeder_report_pop(Feeder *f);

#endif
