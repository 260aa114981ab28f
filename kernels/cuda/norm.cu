/* norm.cu — CUDA bodies of the row-normalisation kernels (src/ops/layer/norm.c): rms_norm,
 * add_rms_norm, rms_norm_q8k, add_rms_norm_q8k, add_rms_norm_q8k_f32, layer_norm, softmax, and the check kernel
 * norm_steps. Group g
 * takes row g with XPU_NORM_BLOCK lanes, lane t accumulating elements t, t + BLOCK, ... in
 * order, then workgroup.cuh's reduce: the order of kernels/cpu/norm.c, so the results equal it
 * bit for bit (docs/ARITHMETIC.md, "Row normalisation"). The lane loops are unrolled so the
 * loads of several trips are in flight at once; the adds stay in order. `/` and sqrt are
 * __fdiv_rn and __fsqrt_rn (correctly rounded), products and sums never fused (-fmad=false,
 * xpu_mul / xpu_add). */
#include "norm.cuh"
#include "../xmath.h"

template <class T>
static __device__ __forceinline__ void norm_rms_regs(T *o, const T *xr, const float *weight, uint32_t cols, float eps)
{
	float v[NORM_R], w[NORM_R];
	norm_regs(v, xr, cols);
	norm_regs(w, weight, cols);
	const float rinv = norm_inv_root(xpu_workgroup_reduce<XPU_WG_ADD>(norm_regs_sumsq(v, cols)), cols, eps);
#pragma unroll
	for (int r = 0; r < NORM_R; r++) {
		const uint32_t i = threadIdx.x + r * NORM_B;
		if (i < cols)
			norm_store(o, i, xpu_mul(xpu_mul(v[r], rinv), w[r]));
	}
}

template <class T>
static __device__ __forceinline__ void norm_rms_row(T *o, const T *xr, const float *weight, uint32_t cols, float eps)
{
	const float rinv = norm_rms_factor(xr, cols, eps);
#pragma unroll 8
	for (uint32_t i = threadIdx.x; i < cols; i += NORM_B)
		norm_store(o, i, xpu_mul(xpu_mul(norm_load(xr, i), rinv), weight[i]));
}

/* dtype XPU_NORM_F32 or XPU_NORM_F16 (x and out; the weight is f32). */
extern "C" __global__ void __launch_bounds__(NORM_B)
rms_norm(uint8_t *out, const uint8_t *x, const float *weight, unsigned rows, unsigned cols, float eps, unsigned dtype)
{
	const uint64_t g = xpu_group();
	if (g >= rows) /* the whole group leaves: no barrier is skipped by part of it */
		return;
	const bool regs = cols <= NORM_B * NORM_R; /* the same in every lane */
	if (dtype == XPU_NORM_F16) {
		uint16_t *o = (uint16_t *)out + g * cols;
		const uint16_t *xr = (const uint16_t *)x + g * cols;
		regs ? norm_rms_regs(o, xr, weight, cols, eps) : norm_rms_row(o, xr, weight, cols, eps);
	} else {
		float *o = (float *)out + g * cols;
		const float *xr = (const float *)x + g * cols;
		regs ? norm_rms_regs(o, xr, weight, cols, eps) : norm_rms_row(o, xr, weight, cols, eps);
	}
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
	if (cols <= NORM_B * NORM_R) {
		float a[NORM_R], b[NORM_R], w[NORM_R];
		norm_regs(a, xr, cols);
		norm_regs(b, rr, cols);
		norm_regs(w, weight, cols);
#pragma unroll
		for (int r = 0; r < NORM_R; r++) {
			const uint32_t i = threadIdx.x + r * NORM_B;
			a[r] = xpu_add(a[r], b[r]);
			if (i < cols)
				h[i] = a[r];
		}
		const float rinv = norm_inv_root(xpu_workgroup_reduce<XPU_WG_ADD>(norm_regs_sumsq(a, cols)), cols, eps);
#pragma unroll
		for (int r = 0; r < NORM_R; r++) {
			const uint32_t i = threadIdx.x + r * NORM_B;
			if (i < cols)
				o[i] = xpu_mul(xpu_mul(a[r], rinv), w[r]);
		}
		return;
	}
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

/* rms_norm's values, each 256 packed as q8k_pack packs them (lane t holds element t of each
 * block; amax the workgroup max of |v| as bits, NaN left out). */
extern "C" __global__ void __launch_bounds__(NORM_B)
rms_norm_q8k(uint8_t *xq, const float *x, const float *weight, unsigned rows, unsigned cols, float eps)
{
	const uint64_t g = xpu_group();
	if (g >= rows)
		return;
	const uint32_t blocks = cols / 256;
	const float *xr = x + g * cols;
	if (cols <= NORM_B * NORM_R) {
		float v[NORM_R];
		norm_regs(v, xr, cols);
		norm_q8k_regs<false>(xq + g * blocks * 320, NULL, v, weight, cols, eps);
		return;
	}
	norm_q8k_blocks<false>(xq + g * blocks * 320, NULL, xr, weight, blocks, norm_rms_factor(xr, cols, eps));
}

/* sum = x + residual (add_rms_norm's pass: each lane reads back only the sums it wrote, so sum
 * may be x or residual), then rms_norm_q8k of the sum: the bytes of add then rms_norm_q8k; with
 * out, the normed values beside the pack (rms_norm's of the sum). */
template <bool OUT>
static __device__ __forceinline__ void add_norm_pack(uint8_t *xq, float *out, float *sum, const float *x,
						     const float *residual, const float *weight, unsigned rows,
						     unsigned cols, float eps)
{
	const uint64_t g = xpu_group();
	if (g >= rows)
		return;
	const uint32_t blocks = cols / 256;
	float *h = sum + g * cols;
	const float *xr = x + g * cols, *rr = residual + g * cols;
	if (cols <= NORM_B * NORM_R) {
		float a[NORM_R], b[NORM_R];
		norm_regs(a, xr, cols);
		norm_regs(b, rr, cols);
#pragma unroll
		for (int r = 0; r < NORM_R; r++) {
			const uint32_t i = threadIdx.x + r * NORM_B;
			a[r] = xpu_add(a[r], b[r]);
			if (i < cols)
				h[i] = a[r];
		}
		norm_q8k_regs<OUT>(xq + g * blocks * 320, OUT ? out + g * cols : NULL, a, weight, cols, eps);
		return;
	}
	float acc = 0.0f;
#pragma unroll 8
	for (uint32_t i = threadIdx.x; i < cols; i += NORM_B) {
		const float v = xpu_add(xr[i], rr[i]);
		h[i] = v;
		acc = xpu_add(acc, xpu_mul(v, v));
	}
	const float rinv = norm_inv_root(xpu_workgroup_reduce<XPU_WG_ADD>(acc), cols, eps);
	norm_q8k_blocks<OUT>(xq + g * blocks * 320, OUT ? out + g * cols : NULL, h, weight, blocks, rinv);
}

/* add_rms_norm_q8k keeps a body of its own, add_norm_pack<false>'s steps written out: as
 * add_norm_pack<false> ptxas spilled 8-12 bytes (sm_90), at 0 this way. */
extern "C" __global__ void __launch_bounds__(NORM_B)
add_rms_norm_q8k(uint8_t *xq, float *sum, const float *x, const float *residual, const float *weight,
		 unsigned rows, unsigned cols, float eps)
{
	const uint64_t g = xpu_group();
	if (g >= rows)
		return;
	const uint32_t blocks = cols / 256;
	float *h = sum + g * cols;
	const float *xr = x + g * cols, *rr = residual + g * cols;
	if (cols <= NORM_B * NORM_R) {
		float a[NORM_R], b[NORM_R];
		norm_regs(a, xr, cols);
		norm_regs(b, rr, cols);
#pragma unroll
		for (int r = 0; r < NORM_R; r++) {
			const uint32_t i = threadIdx.x + r * NORM_B;
			a[r] = xpu_add(a[r], b[r]);
			if (i < cols)
				h[i] = a[r];
		}
		norm_q8k_regs<false>(xq + g * blocks * 320, NULL, a, weight, cols, eps);
		return;
	}
	float acc = 0.0f;
#pragma unroll 8
	for (uint32_t i = threadIdx.x; i < cols; i += NORM_B) {
		const float v = xpu_add(xr[i], rr[i]);
		h[i] = v;
		acc = xpu_add(acc, xpu_mul(v, v));
	}
	const float rinv = norm_inv_root(xpu_workgroup_reduce<XPU_WG_ADD>(acc), cols, eps);
	norm_q8k_blocks<false>(xq + g * blocks * 320, NULL, h, weight, blocks, rinv);
}

extern "C" __global__ void __launch_bounds__(NORM_B)
add_rms_norm_q8k_f32(uint8_t *xq, float *out, float *sum, const float *x, const float *residual,
		     const float *weight, unsigned rows, unsigned cols, float eps)
{
	add_norm_pack<true>(xq, out, sum, x, residual, weight, rows, cols, eps);
}

static __device__ __forceinline__ void layer_norm_regs(float *o, const float *xr, const float *weight,
						       const float *bias, uint32_t cols, unsigned has_bias, float eps)
{
	float v[NORM_R], w[NORM_R], b[NORM_R];
	norm_regs(v, xr, cols);
	norm_regs(w, weight, cols);
	if (has_bias)
		norm_regs(b, bias, cols);
	float acc = 0.0f;
#pragma unroll
	for (int r = 0; r < NORM_R; r++)
		if (threadIdx.x + r * NORM_B < cols)
			acc = xpu_add(acc, v[r]);
	const float mean = __fdiv_rn(xpu_workgroup_reduce<XPU_WG_ADD>(acc), __uint2float_rn(cols));
#pragma unroll
	for (int r = 0; r < NORM_R; r++)
		v[r] = xpu_sub(v[r], mean);
	const float rinv = norm_inv_root(xpu_workgroup_reduce<XPU_WG_ADD>(norm_regs_sumsq(v, cols)), cols, eps);
#pragma unroll
	for (int r = 0; r < NORM_R; r++) {
		const uint32_t i = threadIdx.x + r * NORM_B;
		if (i < cols) {
			const float y = xpu_mul(xpu_mul(v[r], rinv), w[r]);
			o[i] = has_bias ? xpu_add(y, b[r]) : y;
		}
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
	if (cols <= NORM_B * NORM_R) {
		layer_norm_regs(o, xr, weight, bias, cols, has_bias, eps);
		return;
	}
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

/* softmax from registers: each exp is taken once and kept (the loops take it twice, with the
 * same operands, so the same bits). */
static __device__ __forceinline__ void softmax_regs(float *o, const float *xr, uint32_t cols, uint32_t seen,
						    float scale)
{
	float v[NORM_R];
	norm_regs(v, xr, seen);
	float m = __uint_as_float(0xff800000u);
#pragma unroll
	for (int r = 0; r < NORM_R; r++) {
		v[r] = xpu_mul(scale, v[r]);
		if (threadIdx.x + r * NORM_B < seen)
			m = xpu_wg_op<XPU_WG_MAX>(m, v[r]);
	}
	const float mx = xpu_workgroup_reduce<XPU_WG_MAX>(m);
	float acc = 0.0f;
#pragma unroll
	for (int r = 0; r < NORM_R; r++)
		if (threadIdx.x + r * NORM_B < seen) {
			v[r] = xm_exp(xpu_sub(v[r], mx));
			acc = xpu_add(acc, v[r]);
		}
	const float inv = __fdiv_rn(1.0f, xpu_workgroup_reduce<XPU_WG_ADD>(acc));
#pragma unroll
	for (int r = 0; r < NORM_R; r++) {
		const uint32_t i = threadIdx.x + r * NORM_B;
		if (i < cols)
			o[i] = i < seen ? xpu_mul(v[r], inv) : 0.0f;
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
	if (cols <= NORM_B * NORM_R) {
		softmax_regs(o, xr, cols, seen, scale);
		return;
	}
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
