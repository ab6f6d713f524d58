/* _sourcering: one playback source's ring of int16 samples, owned in C (part of the _rt
 * extension: huxleyd.audio._rt.SourceRing).
 *
 * Seconds deep. Python (asyncio, through huxleyd.audio.ring.SharedSampleRing) writes
 * samples through the buffer protocol and publishes write_pos; whoever mixes (the C
 * feeder's thread, _feedthread.c, or the Python audio thread while no feeder runs)
 * reads them and publishes read_pos. Single producer, single consumer; positions count
 * samples forever (the slot is position % capacity). The two positions are the only
 * atomics; who writes each, and which load pairs with it, is said at the field.
 */
#ifndef HUXLEYD_SOURCERING_H
#define HUXLEYD_SOURCERING_H

#define PY_SSIZE_T_CLEAN
#include <Python.h> /* first: before the standard headers */
#include <stdatomic.h>
#include <stdint.h>

typedef struct {
	PyObject_HEAD
	int16_t *buf;
	uint64_t capacity; /* samples; 0 until __init__ succeeded (every method checks) */
	Py_ssize_t shape[1], strides[1];
	/* wpos: written by the producer only (Python, GIL held: the write_pos setter) with
	 *   a release store after the samples are copied in; the consumer's acquire load
	 *   (the feeder's take_positions, or the read_pos setter's check) pairs, so it
	 *   never mixes a slot before its data.
	 * rpos: written by the consumer only (the feeder thread's publish_positions, or the
	 *   Python mixer's read_pos setter while no feeder runs: never both, the engine
	 *   hands over at device open and close) with a release store after the samples
	 *   were read; the producer's acquire load (the write_pos setter's check, and
	 *   SharedSampleRing's room) pairs, so it never overwrites a slot still being read. */
	_Atomic uint64_t wpos;
	_Atomic uint64_t rpos;
	/* endpos: written by the producer only (Python, GIL held: the end_pos setter, from
	 *   PlaybackSource.drained) with a release store: "up to here, nothing more is on
	 *   its way now" (a reply's last delta was written). The feeder's acquire load
	 *   (_feedthread.c's playout buffer) pairs: a held start plays at once, and a dry
	 *   ring at or past it is the end of the audio, not a late source. */
	_Atomic uint64_t endpos;
} SourceRing;

/* The Python type (registered by feeder_add_types). */
extern PyTypeObject SourceRingType;

/* 1 when __init__ succeeded; else 0 with a RuntimeError set. */
int sourcering_open(SourceRing *r);

#endif
