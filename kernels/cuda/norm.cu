/* norm.cu — CUDA bodies of the row-normalisation kernels (src/ops/layer/norm.c): rms_norm,
 * add_rms_norm, rms_norm_q8k, add_rms_norm_q8k, add_rms_norm_q8k_f32, layer_norm, softmax, and the check kernel
 * norm_steps. Group g
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

/* Element i of a row of f32 or of f16 (as its bits), as an f32 (an f16 exactly). */
static __device__ __forceinline__ float norm_load(const float *x, uint32_t i)
{
	return x[i];
}

static __device__ __forceinline__ float norm_load(const uint16_t *x, uint32_t i)
{
	return xpu_f16(x[i]);
}

static __device__ __forceinline__ void norm_store(float *o, uint32_t i, float v)
{
	o[i] = v;
}

static __device__ __forceinline__ void norm_store(uint16_t *o, uint32_t i, float v)
{
	o[i] = __half_as_ushort(__float2half_rn(v));
}

/* Rows of at most NORM_B * NORM_R elements take the register path: every lane loads its
 * elements (and the weight's) at once, so one memory round trip serves the whole row, and the
 * later passes read registers, not memory. The adds are the loops' adds in the loops' order
 * (element t + r * NORM_B is trip r), so the results are the same bits. */
#define NORM_R 16

template <class T>
static __device__ __forceinline__ void norm_regs(float v[NORM_R], const T *x, uint32_t cols)
{
#pragma unroll
	for (int r = 0; r < NORM_R; r++) {
		const uint32_t i = threadIdx.x + r * NORM_B;
		v[r] = i < cols ? norm_load(x, i) : 0.0f;
	}
}

/* The sum of squares of the lane's elements, in trip order. */
static __device__ __forceinline__ float norm_regs_sumsq(const float v[NORM_R], uint32_t cols)
{
	float acc = 0.0f;
#pragma unroll
	for (int r = 0; r < NORM_R; r++)
		if (threadIdx.x + r * NORM_B < cols)
			acc = xpu_add(acc, xpu_mul(v[r], v[r]));
	return acc;
}

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
static __device__ __forceinline__ float norm_rms_factor(const T *x, uint32_t n, float eps)
{
	float acc = 0.0f;
#pragma unroll 8
	for (uint32_t i = threadIdx.x; i < n; i += NORM_B) {
		const float v = norm_load(x, i);
		acc = xpu_add(acc, xpu_mul(v, v));
	}
	return norm_inv_root(xpu_workgroup_reduce<XPU_WG_ADD>(acc), n, eps);
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

/* The largest of the waves' maxima of block b (a max: exact in any order). */
static __device__ __forceinline__ int32_t norm_block_amax(const int32_t (*part)[NORM_R], int b)
{
	int32_t m = part[0][b];
	for (int w = 1; w < NORM_B / 32; w++)
		m = max(m, part[w][b]);
	return m;
}

/* rms_norm_q8k from registers (v: the row's values as norm_regs loads them), every block's
 * amax in one exchange: each wave takes the max of its lanes for every block, one barrier,
 * then each lane the max over the waves. Lane t holds element t of each block, as in the
 * loop, so v, amax, iscale and q are the loop's. */
template <bool OUT>
static __device__ __forceinline__ void norm_q8k_regs(uint8_t *xq, float *out, float v[NORM_R], const float *weight,
						     uint32_t cols, float eps)
{
	__shared__ int32_t part[NORM_B / 32][NORM_R];
	__shared__ int8_t qs[NORM_R * 256];
	const uint32_t t = threadIdx.x, blocks = cols / 256;
	float w[NORM_R];
	int32_t a[NORM_R];
	norm_regs(w, weight, cols);
	const float rinv = norm_inv_root(xpu_workgroup_reduce<XPU_WG_ADD>(norm_regs_sumsq(v, cols)), cols, eps);
#pragma unroll
	for (int r = 0; r < NORM_R; r++) {
		v[r] = xpu_mul(xpu_mul(v[r], rinv), w[r]);
		if (OUT && t + r * NORM_B < cols)
			out[t + r * NORM_B] = v[r];
		const uint32_t ab = __float_as_uint(v[r]) & 0x7fffffffu;
		a[r] = (uint32_t)r < blocks && ab <= 0x7f800000u ? (int32_t)ab : 0;
#pragma unroll
		for (int off = 16; off > 0; off >>= 1)
			a[r] = max(a[r], xpu_wg_xor(a[r], off));
	}
	if ((t & 31) == 0)
#pragma unroll
		for (int r = 0; r < NORM_R; r++)
			part[t / 32][r] = a[r];
	__syncthreads();
#pragma unroll
	for (int r = 0; r < NORM_R; r++) {
		if ((uint32_t)r >= blocks)
			break;
		const int32_t amax = norm_block_amax(part, r);
		qs[r * 256 + t] = amax ? (int8_t)pack_round(xpu_mul(v[r], __fdiv_rn(127.0f, __int_as_float(amax)))) : 0;
	}
	__syncthreads();
	uint32_t *o = (uint32_t *)xq;
	for (uint32_t k = t; k < blocks * 80; k += NORM_B) {
		const uint32_t b = k / 80, word = k % 80;
		const int32_t amax = norm_block_amax(part, (int)b);
		o[k] = amax ? norm_q8k_word(qs + b * 256, word, __int_as_float(amax)) : 0u;
	}
}

/* The row xr's blocks packed into xq (the row's first block), one block at a time: lane t
 * normalises element t of the block by rinv and the weight. */
template <bool OUT>
static __device__ __forceinline__ void norm_q8k_blocks(uint8_t *xq, float *out, const float *xr, const float *weight,
						       uint32_t blocks, float rinv)
{
	__shared__ int8_t qs[NORM_B];
	const uint32_t t = threadIdx.x;
	for (uint32_t b = 0; b < blocks; b++) {
		const uint32_t i = b * 256 + t;
		uint32_t *o = (uint32_t *)(xq + b * 320);
		const float v = xpu_mul(xpu_mul(xr[i], rinv), weight[i]);
		if (OUT)
			out[i] = v;
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
