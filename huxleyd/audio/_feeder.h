/* _feeder: the speaker path with no Python in it (part of the _rt extension).
 *
 * Two types, registered by PyInit__rt (feeder_add_types):
 *
 * - SourceRing: one playback source's ring of int16 samples, owned here, seconds
 *   deep. Python (asyncio, through huxleyd.audio.ring.SampleRing) writes into it
 *   through the buffer protocol and publishes write_pos; whoever mixes (the C
 *   feeder, or the Python audio thread when no feeder runs) reads and publishes
 *   read_pos. Single producer, single consumer, positions count samples forever.
 * - Feeder: a pthread that mixes the four SourceRings with the mixer core
 *   (_mixcore.c), resamples to the device rate (_polyphase.c), converts to int16
 *   and writes into the speaker Output's ring up to `lead` frames ahead of the
 *   DAC, acknowledges cuts (barge-in), tells the callback which sources hold audio
 *   (expect), and logs one report per period for Python (the playout clock). It
 *   never takes the GIL, allocates or locks in its loop, so a Python thread that
 *   holds the GIL delays only the source writers, seconds ahead.
 *
 * Requests (gains, duck, pause, flush, master, the earcon gate) reach the feeder
 * through a seqlock it reads once a period (never waits on it); reports go back
 * through a single-producer/single-consumer log Python drains (a report leaves it
 * only once recorded, so a cut sees it until then). The ordering of
 * every atomic is commented at its field in _feeder.c.
 */
#ifndef HUXLEYD_FEEDER_H
#define HUXLEYD_FEEDER_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Adds SourceRing, Feeder and the report layout constants to the module. 0, or -1. */
int feeder_add_types(PyObject *module);

/* _rt._mixer_holding(state, bits) -> (mask, idle): tests only (see _feeder.c). */
PyObject *feeder_mixer_holding(PyObject *self, PyObject *args);

#endif
