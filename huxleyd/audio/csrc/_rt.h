/* What _rtout.c (the speaker, the module init) and _rtin.c (the mic) share: one
 * extension, huxleyd.audio._rt, named for both streams. */
#ifndef HUXLEYD_RT_H
#define HUXLEYD_RT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <portaudio.h>
#include <stdint.h>

/* A Python OSError naming `what` and PortAudio's reason; returns NULL. */
PyObject *rt_pa_error(const char *what, PaError err);

/* One callback stream on `device`, playback (input = 0) or capture (input = 1);
 * SCHED_FIFO asked when `realtime`. 0, or -1 with a Python error set. */
int rt_open_stream(PaStream **out, int input, int device, int channels, double rate, long period,
		   double latency, int realtime, PaStreamCallback *callback, void *user,
		   PaStreamFinishedCallback *finished, const char *what);

/* Pa_StartStream with the GIL released; None, or NULL with a Python error set. */
PyObject *rt_start_stream(PaStream *stream, const char *which);

/* Abort and close *stream (GIL released), then release PortAudio if *pa_ready;
 * idempotent. 1 when PortAudio was released by this call. */
int rt_close_stream(PaStream **stream, int *pa_ready);

/* Test seam: the next Input copy pauses `ns` half-way (0: none). See _rtin.c. */
void rt_set_copy_pause_ns(long ns);

/* The speaker Output as the C feeder (_feedthread.c) drives it, without the GIL. The
 * feeder is then the ring's only producer: Python does not write() meanwhile. */
int rt_output_is_open(PyObject *obj); /* an Output whose __init__ succeeded */
uint64_t rt_output_channels(PyObject *obj);
uint64_t rt_output_written(PyObject *obj);
uint64_t rt_output_queued(PyObject *obj);
/* Frames the ring has room for now: only grows until the producer writes (the
 * callback only frees slots), so a write of that many takes them all. */
uint64_t rt_output_room(PyObject *obj);
/* Copy up to n interleaved frames into the ring; how many fit. */
uint64_t rt_output_write(PyObject *obj, const int16_t *frames, uint64_t n);
uint32_t rt_output_cut_req(PyObject *obj); /* acquire: a flush published before it is seen */
void rt_output_resume(PyObject *obj, uint32_t seq, uint64_t at);
void rt_output_expect(PyObject *obj, unsigned mask);

/* huxleyd.audio._rt.Input, defined in _rtin.c */
extern PyTypeObject InputType;
extern PyTypeObject OutputType;

#endif
