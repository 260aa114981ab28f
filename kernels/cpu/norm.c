/* norm.c — CPU bodies of the row-normalisation kernels (rms_norm, add_rms_norm, rms_norm_q8k,
 * layer_norm, softmax; signatures in src/ops/layer/norm.c) and of norm_steps, the check of
 * their correctly rounded steps. They define the arithmetic (docs/ARITHMETIC.md, "Row
 * normalisation"): each row is worked as the device's XPU_NORM_BLOCK lanes work it, lane t
 * accumulating elements t, t + BLOCK, ... in order, the lanes then meeting in the reduce of
 * kernels/workgroup.h, so a device result == this one bit for bit. Built with
 * -ffp-contract=off: every product and sum below is its own rounded operation. */
#include "cpu_kernel.h"
#include "norm.h"
#include "workgroup.h"
#include "xmath.h"
#include "quant/f16.h"
#include "quant/formats.h"

#include <math.h>
#include <string.h>

#define B XPU_NORM_BLOCK
#define WAVE XPU_WG_WAVE

/* ---- the workgroup reduce over B lanes, f32 ------------------------------------------------ */

/* kernels/workgroup.h's f32 max: a NaN operand is returned as it is, a first. */
static float max_op(float a, float b)
{
	if (isnan(a))
		return a;
	if (isnan(b))
		return b;
	return b > a ? b : a;
}

static float combine(int op, float a, float b)
{
	return op == XPU_WG_ADD ? a + b : max_op(a, b);
}

/* The workgroup reduce of lanes v[0 .. B) (v destroyed). Each wave's butterfly leaves every lane
 * holding lane 0's value, and lane 0's is the halving tree: at step off, lane l < off takes
 * op(lane l's, lane l + off's). Then the waves' values from wave 0 upward. */
static float group_reduce(int op, float *v)
{
	float r = 0.0f;
	for (int w = 0; w < B / WAVE; w++) {
		float *lane = v + w * WAVE;
		for (int off = WAVE / 2; off >= 1; off >>= 1)
			for (int l = 0; l < off; l++)
				lane[l] = combine(op, lane[l], lane[l + off]);
		r = w == 0 ? lane[0] : combine(op, r, lane[0]);
	}
	return r;
}

/* ---- the rows' statistics --------------------------------------------------------------- */

/* 1 / sqrt(S / n + eps), each step correctly rounded. */
static float inv_root(float sum, uint32_t n, float eps)
{
	float mean = sum / (float)n;
	float v = mean + eps;
	float s = sqrtf(v);
	return 1.0f / s;
}

/* Element i of x, an XPU_NORM_* dtype, as an f32 (an f16 exactly). */
static float load(const void *x, uint32_t dt, uint64_t i)
{
	return dt == XPU_NORM_F16 ? xpu_f16_to_f32(((const uint16_t *)x)[i]) : ((const float *)x)[i];
}

/* The lanes' sums of squares of x[0 .. n), reduced. */
static float sum_squares(const void *x, uint32_t dt, uint32_t n)
{
	float acc[B] = { 0 };
	for (uint32_t base = 0; base < n; base += B)
		for (uint32_t t = 0; t < B && base + t < n; t++) {
			float v = load(x, dt, base + t);
			acc[t] = acc[t] + v * v;
		}
	return group_reduce(XPU_WG_ADD, acc);
}

static float rms_factor(const void *x, uint32_t dt, uint32_t n, float eps)
{
	return inv_root(sum_squares(x, dt, n), n, eps);
}

/* ---- rms_norm: out x weight rows cols eps dtype -------------------------------------------- */

/* f16: each x converted exactly, the steps in f32, each result rounded once to f16. */
static void rms_norm(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	const float *w = karg_ptr(a, 2);
	const uint64_t rows = a[3].u, n = a[4].u;
	const uint32_t dt = (uint32_t)a[6].u, size = dt == XPU_NORM_F16 ? 2 : 4;
	for (uint64_t r = g0; r < g1 && r < rows; r++) {
		const char *xr = (const char *)karg_ptr(a, 1) + r * n * size;
		float rinv = rms_factor(xr, dt, (uint32_t)n, a[5].f);
		for (uint64_t i = 0; i < n; i++) {
			float y = (load(xr, dt, i) * rinv) * w[i];
			if (dt == XPU_NORM_F16)
				((uint16_t *)karg_ptr(a, 0))[r * n + i] = xpu_f32_to_f16(y);
			else
				((float *)karg_ptr(a, 0))[r * n + i] = y;
		}
	}
}

/* ---- add_rms_norm: out sum x residual weight rows cols eps --------------------------------- */

/* sum = x + residual, written first and read back (so sum may be x or residual itself), then
 * rms_norm of sum into out. */
static void add_rms_norm(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	float *out = karg_ptr(a, 0), *sum = karg_ptr(a, 1);
	const float *x = karg_ptr(a, 2), *res = karg_ptr(a, 3), *w = karg_ptr(a, 4);
	const uint64_t rows = a[5].u, n = a[6].u;
	for (uint64_t r = g0; r < g1 && r < rows; r++) {
		float *h = sum + r * n;
		for (uint64_t i = 0; i < n; i++)
			h[i] = x[r * n + i] + res[r * n + i];
		float rinv = rms_factor(h, XPU_NORM_F32, (uint32_t)n, a[7].f);
		for (uint64_t i = 0; i < n; i++)
			out[r * n + i] = (h[i] * rinv) * w[i];
	}
}

/* ---- rms_norm_q8k: xq x weight rows cols eps ----------------------------------------------- */

/* One row's rms_norm values (xr * rinv) * w, each 256-element stretch packed to q8_K by the
 * host pack itself into xq, and the values themselves into out where out is not NULL. */
static void pack_norm_row(uint8_t *xq, float *out, const float *xr, const float *w, uint64_t blocks, float rinv)
{
	float v[XPU_Q8K_ELEMS];
	for (uint64_t b = 0; b < blocks; b++) {
		for (int j = 0; j < XPU_Q8K_ELEMS; j++) {
			uint64_t i = b * XPU_Q8K_ELEMS + (uint64_t)j;
			v[j] = (xr[i] * rinv) * w[i];
		}
		xpu_q8k_pack_block(v, xq + b * XPU_Q8K_BYTES);
		if (out)
			memcpy(out + b * XPU_Q8K_ELEMS, v, sizeof v);
	}
}

void xpu_cpu_rms_norm_q8k_row(uint8_t *xq, const float *xr, const float *w, uint64_t n, float eps)
{
	pack_norm_row(xq, NULL, xr, w, n / XPU_Q8K_ELEMS, rms_factor(xr, XPU_NORM_F32, (uint32_t)n, eps));
}

static void rms_norm_q8k(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	uint8_t *xq = karg_ptr(a, 0);
	const float *x = karg_ptr(a, 1), *w = karg_ptr(a, 2);
	const uint64_t rows = a[3].u, n = a[4].u, blocks = n / XPU_Q8K_ELEMS;
	for (uint64_t r = g0; r < g1 && r < rows; r++)
		xpu_cpu_rms_norm_q8k_row(xq + r * blocks * XPU_Q8K_BYTES, x + r * n, w, n, a[5].f);
}

/* ---- add_rms_norm_q8k[_f32]: xq [out] sum x residual weight rows cols eps ------------------ */

/* sum = x + residual, written first and read back (sum may be x or residual), then
 * rms_norm_q8k of sum into xq: add followed by rms_norm_q8k, the same steps in the same order;
 * with out, the normed values too (rms_norm's of the sum, bit for bit). */
static void add_norm_pack(uint8_t *xq, float *out, float *sum, const float *x, const float *res, const float *w,
			  uint64_t r, uint64_t n, float eps)
{
	const uint64_t blocks = n / XPU_Q8K_ELEMS;
	float *h = sum + r * n;
	for (uint64_t i = 0; i < n; i++)
		h[i] = x[r * n + i] + res[r * n + i];
	pack_norm_row(xq + r * blocks * XPU_Q8K_BYTES, out ? out + r * n : NULL, h, w, blocks,
		      rms_factor(h, XPU_NORM_F32, (uint32_t)n, eps));
}

static void add_rms_norm_q8k(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	for (uint64_t r = g0; r < g1 && r < a[5].u; r++)
		add_norm_pack(karg_ptr(a, 0), NULL, karg_ptr(a, 1), karg_ptr(a, 2), karg_ptr(a, 3), karg_ptr(a, 4), r,
			      a[6].u, a[7].f);
}

static void add_rms_norm_q8k_f32(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	for (uint64_t r = g0; r < g1 && r < a[6].u; r++)
		add_norm_pack(karg_ptr(a, 0), karg_ptr(a, 1), karg_ptr(a, 2), karg_ptr(a, 3), karg_ptr(a, 4), karg_ptr(a, 5),
			      r, a[7].u, a[8].f);
}

/* ---- layer_norm: out x weight bias rows cols has_bias eps ---------------------------------- */

/* mean = S / n over the lanes' sums; var = S2 / n over the lanes' sums of (x - mean)^2. */
static void layer_norm(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	float *out = karg_ptr(a, 0);
	const float *x = karg_ptr(a, 1), *w = karg_ptr(a, 2), *bias = karg_ptr(a, 3);
	const uint64_t rows = a[4].u, n = a[5].u, has_bias = a[6].u;
	const float eps = a[7].f;
	for (uint64_t r = g0; r < g1 && r < rows; r++) {
		const float *xr = x + r * n;
		float acc[B] = { 0 };
		for (uint64_t base = 0; base < n; base += B)
			for (uint64_t t = 0; t < B && base + t < n; t++)
				acc[t] = acc[t] + xr[base + t];
		float mean = group_reduce(XPU_WG_ADD, acc) / (float)n;
		memset(acc, 0, sizeof acc);
		for (uint64_t base = 0; base < n; base += B)
			for (uint64_t t = 0; t < B && base + t < n; t++) {
				float d = xr[base + t] - mean;
				acc[t] = acc[t] + d * d;
			}
		float rinv = inv_root(group_reduce(XPU_WG_ADD, acc), (uint32_t)n, eps);
		for (uint64_t i = 0; i < n; i++) {
			float y = ((xr[i] - mean) * rinv) * w[i];
			out[r * n + i] = has_bias ? y + bias[i] : y;
		}
	}
}

/* ---- softmax: out x rows cols causal pos0 scale -------------------------------------------- */

/* Row r sees columns below `seen` (all, or pos0 + r + 1 under the causal mask); out is
 * e^(scale x - max) times 1 / sum there, exactly 0 past it. */
static void softmax(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	float *out = karg_ptr(a, 0);
	const float *x = karg_ptr(a, 1);
	const uint64_t rows = a[2].u, n = a[3].u, causal = a[4].u, pos0 = a[5].u;
	const float scale = a[6].f;
	for (uint64_t r = g0; r < g1 && r < rows; r++) {
		const float *xr = x + r * n;
		uint64_t seen = causal && pos0 + r + 1 < n ? pos0 + r + 1 : n;
		float acc[B];
		for (int t = 0; t < B; t++)
			acc[t] = -INFINITY;
		for (uint64_t base = 0; base < seen; base += B)
			for (uint64_t t = 0; t < B && base + t < seen; t++)
				acc[t] = max_op(acc[t], scale * xr[base + t]);
		float max = group_reduce(XPU_WG_MAX, acc);
		memset(acc, 0, sizeof acc);
		for (uint64_t base = 0; base < seen; base += B)
			for (uint64_t t = 0; t < B && base + t < seen; t++)
				acc[t] = acc[t] + xm_exp(scale * xr[base + t] - max);
		float inv = 1.0f / group_reduce(XPU_WG_ADD, acc);
		for (uint64_t i = 0; i < n; i++)
			out[r * n + i] = i < seen ? xm_exp(scale * xr[i] - max) * inv : 0.0f;
	}
}

/* ---- norm_steps: out x n d — the correctly rounded steps, one item a lane ------------------ */

/* out[3i] = sqrt(x[i]), out[3i + 1] = 1 / x[i], out[3i + 2] = x[i] / d. */
static void norm_steps(const struct xpu_karg *a, uint64_t g0, uint64_t g1, const struct xpu_cpu_launch *l)
{
	float *out = karg_ptr(a, 0);
	const float *x = karg_ptr(a, 1);
	const uint64_t n = a[2].u, per = l->block[0];
	const float d = a[3].f;
	for (uint64_t i = g0 * per; i < g1 * per && i < n; i++) {
		out[3 * i] = sqrtf(x[i]);
		out[3 * i + 1] = 1.0f / x[i];
		out[3 * i + 2] = x[i] / d;
	}
}

const struct xpu_cpu_entry xpu_cpu_entries_norm[] = {
	{ "rms_norm", rms_norm },
	{ "add_rms_norm", add_rms_norm },
	{ "rms_norm_q8k", rms_norm_q8k },
	{ "add_rms_norm_q8k", add_rms_norm_q8k },
	{ "add_rms_norm_q8k_f32", add_rms_norm_q8k_f32 },
	{ "layer_norm", layer_norm },
	{ "softmax", softmax },
	{ "norm_steps", norm_steps },
	{ NULL, NULL },
};
