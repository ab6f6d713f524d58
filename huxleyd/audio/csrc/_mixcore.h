/* _mixcore: one period of the four-source mixer, in plain C (no Python, no locks).
 *
 * huxleyd's one mixer (issue 39), as a pure function of its state,
 * this period's requests and the source rings: per-source user gain ramps, duck
 * ramps (linear in dB), transport fades (pause, resume, flush), the earcon-before-
 * speech gate, the master gain and the soft limiter. It allocates nothing, blocks on
 * nothing and touches no Python object, so the same code can run with the GIL held
 * (the Python audio thread, through _dsp.mix_period) or without it (a C thread or
 * the PortAudio callback, which is where it is headed: see docs/architecture.md).
 *
 * The numpy oracle (tests/oracles/numpy_mixer.py, and limiter.py's numpy path) is
 * the reference: the arithmetic is numpy's float32 operation for operation (build
 * with -ffp-contract=off), the gain steps are Python's doubles, and
 * tests/audio/test_mix_oracle.py and test_mixcore.py compare the two on generated
 * scenes and request scripts.
 *
 * Concurrency is the caller's: mc_mix_period reads a snapshot of the requests (the
 * `req_*` fields and each ring's write position) that the caller took, and writes
 * back only state, the rings' read positions and the period's report. Who may
 * write what, and with which memory order, is the embedding's business.
 */
#ifndef HUXLEYD_MIXCORE_H
#define HUXLEYD_MIXCORE_H

#include <stdint.h>

/* the mixing order (and _dsp.SOURCE_ORDER): earcon first, so speech may start right after it */
enum { MC_EARCON, MC_SPEECH, MC_CONTENT, MC_COMMS, MC_SOURCES };

typedef struct {
	/* the ring: int16 samples, positions count samples since creation */
	const int16_t *samples;
	uint64_t capacity;
	uint64_t read_pos;  /* moved here */
	uint64_t write_pos; /* snapshot: what the producer had published */
	/* requests (snapshot) */
	double req_gain;
	int req_ducked, req_paused;
	uint64_t req_flush_seq;
	uint64_t req_flush_to; /* published by req_flush_seq */
	/* the embedding's playout buffer (_feedthread.c): 1 holds the queued samples back
	 * this period (nothing pulled, no dry counted; a flush still drops them). Python's
	 * mixer leaves it 0. */
	int held;
	/* state (the mixer's own) */
	double gain, duck_db;
	int paused, flowing;
	uint64_t flush_seq;
	/* the period's report */
	uint64_t pull_start, pull_offset, pull_count;
	uint64_t dry_count;           /* ran dry part way after a full period (cumulative) */
	uint64_t skip_from, skip_to;  /* a flush this period dropped [skip_from, skip_to) */
} mc_source;

typedef struct {
	/* configuration, fixed at open */
	uint64_t period; /* samples per period */
	uint64_t ramp;   /* transport fade length, 1..period */
	double depth_db, attack_step_db, release_step_db;
	double threshold, release_step, knee; /* the limiter's */
	const float *unit;     /* period samples: (i + 1) / period */
	const float *fade_out; /* 1 -> 0 over ramp samples, then 0 */
	const float *fade_in;  /* 0 -> 1 over ramp samples, then 1 */
	const float *attack;   /* the limiter's attack shape */
	/* requests (snapshot) */
	double req_master;
	uint64_t req_gate_seq, req_gate_earcon_end, req_gate_speech_pos;
	/* state */
	double master;
	uint64_t gate_seq, gate_earcon_end, gate_speech_pos;
	int gate_active;
	double limiter_gain;
	uint64_t limiter_active; /* periods either limiter stage changed the signal */
	mc_source src[MC_SOURCES];
} mc_mixer;

/* Fill out[0, period) with the mixed, gained and limited sources (Mixer.mix). */
void mc_mix_period(mc_mixer *m, float *out);

/* SourceChannel.render's arithmetic: add `count` ring samples from index `start`
 * (wrapping at `cap`) into mix[offset:], times unit * (g1 - g0) + g0 (times fade). */
void mc_add_source(float *mix, const int16_t *ring, uint64_t cap, uint64_t start, uint64_t count,
		   uint64_t offset, double g0, double g1, const float *unit, const float *fade);

/* buf[0, n) *= shape * (g1 - g0) + g0; a constant when g0 == g1 (the master gain) */
void mc_gain(float *buf, const float *unit, uint64_t n, double g0, double g1);

/* SoftLimiter.process on buf[0, n): returns the new block gain, sets *active. */
double mc_limit(float *buf, uint64_t n, double gain, double threshold, double release_step,
		double knee, const float *attack, const float *unit, int *active);

#endif
