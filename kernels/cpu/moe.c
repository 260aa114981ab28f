/* moe.c — CPU bodies of the mixture-of-experts layer kernels (src/ops/layer/moe.c): matvec_f32
 * and moe_combine. They define the arithmetic (docs/ARITHMETIC.md, "Mixture-of-experts
 * kernels"): matvec_f32 works each (token, row) pair as the devices' 32-lane wave does, lane l
 * taking columns l, l + 32, ... in order, then the butterfly of kernels/workgroup.h; moe_combine
 * one function per element. Built with -ffp-contract=off: every product and sum below is its
 * own rounded operation. */
#include "cpu_kernel.h"
#include "moe.h"
#include "workgroup.h"

#include <string.h>

#define WAVE XPU_WG_WAVE

/* The wave's butterfly (kernels/workgroup.h): at off = 16 .. 1 lanes l and l ^ off both take
 * lower + upper; lane 0's value is the sum. */
static float wave_sum(float *v)
{
	float t[WAVE];
	for (uint32_t off = WAVE / 2; off >= 1; off >>= 1) {
		for (uint32_t l = 0; l < WAVE; l++)
			t[l] = v[l & ~off] + v[l | off];
		memcpy(v, t, sizeof t);
	}
	return v[0];
}

/* w[0 .. n) . x[0 .. n): lane l's products of columns l, l + 32, ... added in order from +0.
 * The whole-wave steps are one loop over 32 independent lanes, which the compiler vectorises
 * without reassociating anything. */
static float dot_wave(const float *w, const float *x, uint32_t n)
{
	float acc[WAVE] = { 0 };
	uint32_t c = 0;
	for (; c + WAVE <= n; c += WAVE)
		for (uint32_t l = 0; l < WAVE; l++)
			acc[l] = acc[l] + w[c + l] * x[c + l];
	for (uint32_t l = 0; c + l < n; l++)
		acc[l] = acc[l] + w[c + l] * x[c + l];
	return wave_sum(acc);
}

/* y w x rows cols tokens: group g takes pairs g * WAVES .. (pair p: token p / rows, row p % rows). */
static void matvec_f32(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	float *y = karg_ptr(a, 0);
	const float *w = karg_ptr(a, 1), *x = karg_ptr(a, 2);
	const uint64_t rows = a[3].u, cols = a[4].u, pairs = rows * a[5].u;
	(void)l;
	for (uint64_t p = g0 * XPU_MV32_WAVES; p < g1 * XPU_MV32_WAVES && p < pairs; p++) {
		uint64_t t = p / rows, r = p % rows;
		y[p] = dot_wave(w + r * cols, x + t * cols, (uint32_t)cols);
	}
}

/* out x w y tokens used n: out[t, i] = x[t, i] + s, s = +0, then s = s + w[t, k] y[t, k, i]
 * for k = 0 .. used - 1. Group g takes items g * BLOCK .. (item t * n + i); out may be x. */
static void moe_combine(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	float *out = karg_ptr(a, 0);
	const float *x = karg_ptr(a, 1), *w = karg_ptr(a, 2), *y = karg_ptr(a, 3);
	const uint64_t used = a[5].u, n = a[6].u, items = a[4].u * n;
	(void)l;
	for (uint64_t e = g0 * XPU_MOE_BLOCK; e < g1 * XPU_MOE_BLOCK && e < items; e++) {
		uint64_t t = e / n, i = e % n;
		float s = 0.0f;
		for (uint64_t k = 0; k < used; k++)
			s = s + w[t * used + k] * y[(t * used + k) * n + i];
		out[e] = x[e] + s;
	}
}

const struct xpu_cpu_entry xpu_cpu_entries_moe[] = {
	{ "matvec_f32", matvec_f32 },
	{ "moe_combine", moe_combine },
	{ NULL, NULL },
};
