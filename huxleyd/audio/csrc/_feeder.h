/* _feeder: the speaker path with no Python in it (part of the _rt extension).
 *
 * Two types, registered by PyInit__rt (feeder_add_types), in three layers:
 *
 * - SourceRing (_sourcering.h/.c): one playback source's ring of int16 samples,
 *   owned in C, seconds deep. Python (asyncio, through SharedSampleRing) writes
 *   into it through the buffer protocol and publishes write_pos; whoever mixes (the
 *   C feeder, or the Python audio thread when no feeder runs) reads and publishes
 *   read_pos.
 * - the feeder's thread (_feedthread.h/.c): a pthread that mixes the four
 *   SourceRings with the mixer core, resamples, converts to int16 and writes into
 *   the speaker Output's ring up to `lead` frames ahead of the DAC, acknowledges
 *   cuts (barge-in), tells the callback which sources hold audio (expect), and logs
 *   one report per period (before the period's frames enter the ring) for Python's
 *   playout clock. It never takes the GIL, allocates or locks in its loop, so a
 *   Python thread that holds the GIL delays only the source writers, seconds ahead.
 *   Requests (gains, duck, pause, flush, master, the earcon gate) reach it through a
 *   seqlock it reads once a period (never waits on it); reports go back through a
 *   single-producer/single-consumer log Python drains (a report leaves it only once
 *   recorded, so a cut sees it until then).
 * - the Feeder type (this header, _feeder.c): Python's side, GIL held: init,
 *   start/stop, request, wake, the log's peek/pop/pending, status.
 *
 * Each header says, for every atomic field it declares, who writes it, with which
 * memory order, and which load pairs with it.
 */
#ifndef HUXLEYD_FEEDER_H
#define HUXLEYD_FEEDER_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Adds SourceRing, Feeder and the report layout constants to the module. 0, or -1. */
int feeder_add_types(PyObject *module);

/* _rt._mixer_holding(state, bits) -> (mask, idle): tests only (see _feeder.c). */
PyObject *feeder_mixer_holding(PyObject *self, PyObject *args);

/* _hold_shrunk(target_ms, low_water_ms, floor_ms) -> ms: tests only (feeder_hold_shrunk;
 * low_water_ms None: nothing was fed in pieces). */
PyObject *feeder_hold_shrunk_py(PyObject *self, PyObject *args);

#endif
