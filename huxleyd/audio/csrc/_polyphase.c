/* _polyphase: the resampler in plain C. See _polyphase.h for the contract. */
#include "_polyphase.h"

#include <string.h>

/* numpy's float32 add.reduce over one contiguous row: its pairwise sum (a plain
 * loop under 8 items, 8 accumulators up to 128, halves above). Same order, same bits. */
static float pairwise(const float *a, size_t n)
{
	if (n < 8) {
		float res = 0.0f;
		for (size_t i = 0; i < n; i++)
			res += a[i];
		return res;
	}
	if (n <= 128) {
		float r[8];
		size_t i;
		for (size_t k = 0; k < 8; k++)
			r[k] = a[k];
		for (i = 8; i < n - (n % 8); i += 8)
			for (size_t k = 0; k < 8; k++)
				r[k] += a[i + k];
		float res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
		for (; i < n; i++)
			res += a[i];
		return res;
	}
	size_t half = n / 2;
	half -= half % 8;
	return pairwise(a, half) + pairwise(a + half, n - half);
}

/* sum over t of x[-t] * w[t], products summed in numpy's pairwise order (see pairwise);
 * `newest` is x's index in `base`, at least n - 1 */
static float dot_pairwise(const float *base, size_t newest, const float *w, size_t n)
{
	const float *x = base + newest;
	if (n < 8 || n > 128) {
		float row[PP_MAX_TAPS];
		for (size_t t = 0; t < n; t++)
			row[t] = *(x - t) * w[t];
		return pairwise(row, n);
	}
	float r[8];
	size_t i;
	for (size_t k = 0; k < 8; k++)
		r[k] = *(x - k) * w[k];
	for (i = 8; i < n - (n % 8); i += 8)
		for (size_t k = 0; k < 8; k++)
			r[k] += *(x - (i + k)) * w[i + k];
	float res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
	for (; i < n; i++)
		res += *(x - i) * w[i];
	return res;
}

/* Output j is the row sum of taps[j, t] * ext[newest(j) - t + history], newest(j) =
 * j * down / up: every index is checked against the shapes before anything is written. */
int pp_resample(float *ext, size_t ext_n, const float *block, size_t block_n, const float *taps,
		size_t taps_n, float *out, size_t out_n, long up, long down, const char **why)
{
	if (up <= 0 || down <= 0 || out_n == 0 || taps_n % out_n) {
		*why = "bad rates or taps";
		return -1;
	}
	size_t per = taps_n / out_n;
	if (per == 0 || per > PP_MAX_TAPS || ext_n < block_n || ext_n - block_n != per - 1 ||
	    (size_t)(((unsigned long long)(out_n - 1) * (unsigned long long)down) /
		     (unsigned long long)up) >= block_n) {
		*why = "history and block do not match the taps";
		return -1;
	}
	size_t history = per - 1;
	memcpy(ext + history, block, block_n * sizeof(float));
	for (size_t j = 0; j < out_n; j++) {
		size_t newest = (size_t)(((unsigned long long)j * (unsigned long long)down) /
					 (unsigned long long)up) + history;
		out[j] = dot_pairwise(ext, newest, taps + j * per, per);
	}
	if (history)
		memmove(ext, ext + block_n, history * sizeof(float));
	return 0;
}
