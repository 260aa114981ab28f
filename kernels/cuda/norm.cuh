/* norm.cuh — the row-normalisation steps the CUDA kernels share: norm.cu's kernels, and the MoE
 * tail that normalises the residual it finishes (moe_tail.cu). Lane t of a group of NORM_B
 * accumulates elements t, t + NORM_B, ... in order, then workgroup.cuh's reduce: the order of
 * kernels/cpu/norm.c (docs/ARITHMETIC.md, "Row normalisation"). */
#ifndef XPU_NORM_CUH
#define XPU_NORM_CUH

#include "workgroup.cuh"
#include "q8k.cuh"
#include "../norm.h"
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

/* A row other groups of the launch wrote (the MoE tail's residual): read past this SM's L1. */
static __device__ __forceinline__ float norm_load(const volatile float *x, uint32_t i)
{
	return x[i];
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
template <bool OUT, class T>
static __device__ __forceinline__ void norm_q8k_blocks(uint8_t *xq, float *out, const T *xr, const float *weight,
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


#endif
