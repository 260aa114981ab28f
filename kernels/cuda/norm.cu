/* norm.cu — CUDA bodies of the row-normalisation kernels (src/ops/layer/norm.c): rms_norm,
 * add_rms_norm, rms_norm_q8k, layer_norm, softmax, and the check kernel norm_steps. Group g
 * takes row g with XPU_NORM_BLOCK lanes, lane t accumulating elements t, t + BLOCK, ... in
 * order, then workgroup.cuh's reduce: the order of kernels/cpu/norm.c, so the results equal it
 * bit for bit (docs/ARITHMETIC.md, "Row normalisation"). The lane loops are unrolled so the
 * loads of several trips are in flight at once; the adds stay in order. `/` and sqrt are
 * __fdiv_rn and __fsqrt_rn (correctly rounded), products and sums never fused (-fmad=false,
 * xpu_mul / xpu_add). */
#include "workgroup.cuh"
#include "q8k.cuh"
#include "../norm.h"
#include "../xmath.h"

#define NORM_B XPU_NORM_BLOCK

/* 1 / sqrt(sum / n + eps), each step correctly rounded. */
static __device__ __forceinline__ float norm_inv_root(float sum, uint32_t n, float eps)
{
	const float mean = __fdiv_rn(sum, __uint2float_rn(n));
	return __fdiv_rn(1.0f, __fsqrt_rn(xpu_add(mean, eps)));
}

static __device__ __forceinline__ float norm_rms_factor(const float *x, uint32_t n, float eps)
{
	float acc = 0.0f;
#pragma unroll 8
	for (uint32_t i = threadIdx.x; i < n; i += NORM_B)
		acc = xpu_add(acc, xpu_mul(x[i], x[i]));
	return norm_inv_root(xpu_workgroup_reduce<XPU_WG_ADD>(acc), n, eps);
}

extern "C" __global__ void __launch_bounds__(NORM_B)
rms_norm(float *out, const float *x, const float *weight, unsigned rows, unsigned cols, float eps)
{
	const uint64_t g = xpu_group();
	if (g >= rows) /* the whole group leaves: no barrier is skipped by part of it */
		return;
	const float *xr = x + g * cols;
	float *o = out + g * cols;
	const float rinv = norm_rms_factor(xr, cols, eps);
#pragma unroll 8
	for (uint32_t i = threadIdx.x; i < cols; i += NORM_B)
		o[i] = xpu_mul(xpu_mul(xr[i], rinv), weight[i]);
}

/* sum = x + residual, read back by the lane that wrote it (sum may be x or residual). */
extern "C" __global__ void __launch_bounds__(NORM_B)
add_rms_norm(float *out, float *sum, const float *x, const float *residual, const float *weight, unsigned rows,
	     unsigned cols, float eps)
{
	const uint64_t g = xpu_group();
	if (g >= rows)
		return;
	float *h = sum + g * cols, *o = out + g * cols;
	const float *xr = x + g * cols, *rr = residual + g * cols;
	float acc = 0.0f;
#pragma unroll 8
	for (uint32_t i = threadIdx.x; i < cols; i += NORM_B) {
		const float v = xpu_add(xr[i], rr[i]);
		h[i] = v;
		acc = xpu_add(acc, xpu_mul(v, v));
	}
	const float rinv = norm_inv_root(xpu_workgroup_reduce<XPU_WG_ADD>(acc), cols, eps);
#pragma unroll 8
	for (uint32_t i = threadIdx.x; i < cols; i += NORM_B)
		o[i] = xpu_mul(xpu_mul(h[i], rinv), weight[i]);
}

/* Word t (0 .. 79) of a q8_K block whose q are in qs: four q bytes, a sum, d, or zero. */
static __device__ __forceinline__ uint32_t norm_q8k_word(const int8_t *qs, uint32_t t, float amax)
{
	if (t < 64)
		return (uint32_t)(uint8_t)qs[4 * t] | (uint32_t)(uint8_t)qs[4 * t + 1] << 8 |
		       (uint32_t)(uint8_t)qs[4 * t + 2] << 16 | (uint32_t)(uint8_t)qs[4 * t + 3] << 24;
	if (t < 72) {
		int s = 0;
		for (int i = 0; i < 32; i++)
			s += qs[32 * (t - 64) + i];
		return (uint32_t)s;
	}
	return t == 72 ? __float_as_uint(__fdiv_rn(amax, 127.0f)) : 0u;
}

/* rms_norm's values, each 256 packed as q8k_pack packs them (lane t holds element t of each
 * block; amax the workgroup max of |v| as bits, NaN left out). */
extern "C" __global__ void __launch_bounds__(NORM_B)
rms_norm_q8k(uint8_t *xq, const float *x, const float *weight, unsigned rows, unsigned cols, float eps)
{
	__shared__ int8_t qs[NORM_B];
	const uint64_t g = xpu_group();
	if (g >= rows)
		return;
	const uint32_t t = threadIdx.x, blocks = cols / 256;
	const float *xr = x + g * cols;
	const float rinv = norm_rms_factor(xr, cols, eps);
	for (uint32_t b = 0; b < blocks; b++) {
		const uint32_t i = b * 256 + t;
		uint32_t *o = (uint32_t *)(xq + (g * blocks + b) * 320);
		const float v = xpu_mul(xpu_mul(xr[i], rinv), weight[i]);
		const uint32_t a = __float_as_uint(v) & 0x7fffffffu;
		const int32_t amax = xpu_workgroup_reduce<XPU_WG_MAX>((int32_t)(a > 0x7f800000u ? 0u : a));
		if (amax == 0) { /* the same in every lane */
			if (t < 80)
				o[t] = 0u;
			continue;
		}
		const float iscale = __fdiv_rn(127.0f, __int_as_float(amax));
		qs[t] = (int8_t)pack_round(xpu_mul(v, iscale));
		__syncthreads();
		if (t < 80)
			o[t] = norm_q8k_word(qs, t, __int_as_float(amax));
		/* the next block's reduce ends every read of qs before qs is written again */
	}
}

extern "C" __global__ void __launch_bounds__(NORM_B)
layer_norm(float *out, const float *x, const float *weight, const float *bias, unsigned rows, unsigned cols,
	   unsigned has_bias, float eps)
{
	const uint64_t g = xpu_group();
	if (g >= rows)
		return;
	const float *xr = x + g * cols;
	float *o = out + g * cols;
	float acc = 0.0f;
#pragma unroll 8
	for (uint32_t i = threadIdx.x; i < cols; i += NORM_B)
		acc = xpu_add(acc, xr[i]);
	const float mean = __fdiv_rn(xpu_workgroup_reduce<XPU_WG_ADD>(acc), __uint2float_rn(cols));
	acc = 0.0f;
#pragma unroll 8
	for (uint32_t i = threadIdx.x; i < cols; i += NORM_B) {
		const float d = xpu_sub(xr[i], mean);
		acc = xpu_add(acc, xpu_mul(d, d));
	}
	const float rinv = norm_inv_root(xpu_workgroup_reduce<XPU_WG_ADD>(acc), cols, eps);
#pragma unroll 8
	for (uint32_t i = threadIdx.x; i < cols; i += NORM_B) {
		const float y = xpu_mul(xpu_mul(xpu_sub(xr[i], mean), rinv), weight[i]);
		o[i] = has_bias ? xpu_add(y, bias[i]) : y;
	}
}

/* Row g sees columns below seen (all, or pos0 + g + 1 under the causal mask). */
extern "C" __global__ void __launch_bounds__(NORM_B)
softmax(float *out, const float *x, unsigned rows, unsigned cols, unsigned causal, unsigned pos0, float scale)
{
	const uint64_t g = xpu_group();
	if (g >= rows)
		return;
	const float *xr = x + g * cols;
	float *o = out + g * cols;
	const uint64_t lim = (uint64_t)pos0 + g + 1;
	const uint32_t seen = causal && lim < cols ? (uint32_t)lim : cols;
	float m = __uint_as_float(0xff800000u);
#pragma unroll 8
	for (uint32_t i = threadIdx.x; i < seen; i += NORM_B)
		m = xpu_wg_op<XPU_WG_MAX>(m, xpu_mul(scale, xr[i]));
	const float mx = xpu_workgroup_reduce<XPU_WG_MAX>(m);
	float acc = 0.0f;
#pragma unroll 8
	for (uint32_t i = threadIdx.x; i < seen; i += NORM_B)
		acc = xpu_add(acc, xm_exp(xpu_sub(xpu_mul(scale, xr[i]), mx)));
	const float inv = __fdiv_rn(1.0f, xpu_workgroup_reduce<XPU_WG_ADD>(acc));
#pragma unroll 8
	for (uint32_t i = threadIdx.x; i < cols; i += NORM_B)
		o[i] = i < seen ? xpu_mul(xm_exp(xpu_sub(xpu_mul(scale, xr[i]), mx)), inv) : 0.0f;
}

/* out[3i] = sqrt(x[i]), out[3i + 1] = 1 / x[i], out[3i + 2] = x[i] / d. */
extern "C" __global__ void __launch_bounds__(1024)
norm_steps(float *out, const float *x, unsigned n, float d)
{
	const uint64_t i = xpu_group() * (blockDim.x * blockDim.y * blockDim.z) + xpu_thread();
	if (i >= n)
		return;
	out[3 * i] = __fsqrt_rn(x[i]);
	out[3 * i + 1] = __fdiv_rn(1.0f, x[i]);
	out[3 * i + 2] = __fdiv_rn(x[i], d);
}
