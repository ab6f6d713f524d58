/* _polyphase: the streaming polyphase resampler and the float -> int16 conversion, in
 * plain C (no Python objects, no allocation, no locks), so a GIL-free thread (the C
 * feeder, _feedthread.c) and the Python kernel (_dsp.c's resample, play and capture) run
 * the same code. The numpy reference is huxleyd/audio/resample.py (StreamResampler)
 * and pcm.float_to_int16_into; tests/audio/test_dsp_kernel.py compares them through
 * _dsp on generated inputs. Build with -ffp-contract=off: numpy rounds each operation.
 */
#ifndef HUXLEYD_POLYPHASE_H
#define HUXLEYD_POLYPHASE_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* the most taps one output sample may use (the stack row in pp_dot) */
#define PP_MAX_TAPS 512

/* StreamResampler.process: `ext` holds `ext_n - block_n` carried input samples, then
 * room for `block`; `taps` is (out_n, taps_n / out_n), each output's taps newest input
 * first. Writes out[0, out_n) and carries the history. 0, or -1 (a bad shape: nothing
 * written) with *why set to the reason. */
int pp_resample(float *ext, size_t ext_n, const float *block, size_t block_n, const float *taps,
		size_t taps_n, float *out, size_t out_n, long up, long down, const char **why);

/* float32 -> int16 as float_to_int16_into: scale, round half to even, clip */
static inline int16_t pp_to_int16(float v)
{
	v = v * 32768.0f;
	v = rintf(v);
	if (v < -32768.0f)
		v = -32768.0f;
	else if (v > 32767.0f)
		v = 32767.0f;
	return (int16_t)v;
}

#endif
