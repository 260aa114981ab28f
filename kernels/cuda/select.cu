/* select.cu — CUDA bodies of the selection kernels (src/ops/layer/select.c): get_rows, argmax,
 * top_k, compact (one group; counts, offsets, scatter) and expert_map, equal to the CPU bodies
 * (kernels/cpu/select.c) bit for bit: the same value formulas with no fused multiply-add, the
 * same order key, the workgroup primitives' order (workgroup.cuh) for top_k's sum, xm_exp
 * (kernels/xmath.h) and IEEE division. Blocks are kernels/select.h's. */
#include "workgroup.cuh"
#include "../select.h"
#include "../xmath.h"

/* ---- shared: the order key, exact f16 -------------------------------------------------------- */

static __device__ __forceinline__ bool sel_nan_bits(uint32_t u)
{
	return (u & 0x7fffffffu) > 0x7f800000u;
}

/* A value's place in the order, unsigned: NaN above +inf, -0 equal to +0. */
static __device__ __forceinline__ uint32_t sel_order(uint32_t u)
{
	if (sel_nan_bits(u))
		return 0xffffffffu;
	if (u == 0x80000000u)
		u = 0;
	return (u & 0x80000000u) ? ~u : u | 0x80000000u;
}

/* The place (top bit flipped: a signed high word), then 2^32 - 1 - i: the signed i64 max is the
 * element chosen first. */
static __device__ __forceinline__ int64_t sel_key(uint32_t bits, uint32_t i)
{
	return (int64_t)(((uint64_t)(sel_order(bits) ^ 0x80000000u) << 32) | (0xffffffffu - i));
}

static __device__ __forceinline__ uint32_t sel_index(int64_t key)
{
	return 0xffffffffu - (uint32_t)(uint64_t)key;
}

/* f16 bits to f32 as the host converts (src/quant/f16.h): exact, a NaN quiet with its payload. */
static __device__ __forceinline__ float sel_f16(uint32_t h)
{
	uint32_t s = (h & 0x8000u) << 16, e = (h >> 10) & 31u, m = h & 1023u;
	if (e == 31u)
		return __uint_as_float(s | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0u));
	if (e != 0u)
		return __uint_as_float(s | ((e + 112u) << 23) | (m << 13));
	if (m == 0u)
		return __uint_as_float(s);
	uint32_t p = 31u - __clz(m); /* the top bit: m * 2^-24 = 2^(p - 24) * 1.f */
	return __uint_as_float(s | ((p + 103u) << 23) | ((m << (23u - p)) & 0x7fffffu));
}

static __device__ __forceinline__ uint32_t sel_ld16(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

/* ---- get_rows -------------------------------------------------------------------------------- */

/* q4_K: sub-block j's 6-bit scale and min from scales[12] at s (ggml's get_scale_min_k4). */
static __device__ __forceinline__ void sel_scale_min_k4(uint32_t j, const uint8_t *s, uint32_t *sc, uint32_t *m)
{
	if (j < 4u) {
		*sc = s[j] & 63u;
		*m = s[j + 4] & 63u;
	} else {
		*sc = (s[j + 4] & 15u) | ((s[j - 4] >> 6) << 4);
		*m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
	}
}

/* Where a block's bytes are: b[p] is its byte p outside the scale, s its scale's bytes. A GGUF
 * row holds the block whole (s = b + the scale's offset); a resident row holds the scales
 * first and the payloads after them (b is placed so that b[p] is still byte p). */
struct sel_block {
	const uint8_t *b, *s;
};

static __device__ __forceinline__ sel_block sel_block_at(const uint8_t *row, uint32_t fmt, bool resident,
							 uint32_t j, uint32_t blocks)
{
	const uint32_t bytes = fmt == XPU_SEL_Q8_0 ? 34 : fmt == XPU_SEL_Q4_0 ? 18 : fmt == XPU_SEL_Q4_K ? 144 : 210;
	const uint32_t sb = XPU_SEL_SCALE_BYTES(fmt), at = XPU_SEL_SCALE_AT(fmt);
	if (!resident)
		return { row + (uint64_t)j * bytes, row + (uint64_t)j * bytes + at };
	const uint32_t prefix = (blocks * sb + 3) / 4 * 4, pay_at = at == 0 ? sb : 0;
	return { row + prefix + (uint64_t)j * (bytes - sb) - pay_at, row + (uint64_t)j * sb };
}

/* q6_K element e of block k: half h, quarter q of it (the nibble and the qh bit pair),
 * (d * sc) * q as the reference dequantize rounds it. */
static __device__ __forceinline__ float sel_q6_K_value(sel_block k, uint32_t e)
{
	const uint32_t h = e / 128, q = (e % 128) / 32, l = e % 32;
	const uint32_t lo = k.b[64 * h + l + 32 * (q & 1u)], hb = k.b[128 + 32 * h + l];
	const int v = (int)(((q < 2 ? lo & 15u : lo >> 4) | ((hb >> (2 * q)) & 3u) << 4)) - 32;
	const float sc = (float)(int8_t)k.b[192 + 8 * h + l / 16 + 2 * q];
	return xpu_mul(xpu_mul(sel_f16(sel_ld16(k.s)), sc), (float)v);
}

static __device__ float sel_row_value(const uint8_t *row, uint32_t fmt, bool resident, uint32_t cols, uint32_t c)
{
	if (fmt == XPU_SEL_F16)
		return sel_f16(sel_ld16(row + 2 * c));
	const uint32_t elems = fmt == XPU_SEL_Q8_0 || fmt == XPU_SEL_Q4_0 ? 32 : 256;
	const sel_block k = sel_block_at(row, fmt, resident, c / elems, cols / elems);
	if (fmt == XPU_SEL_Q8_0)
		return xpu_mul((float)(int8_t)k.b[2 + c % 32], sel_f16(sel_ld16(k.s)));
	if (fmt == XPU_SEL_Q4_0) {
		uint32_t j = c % 32, x = k.b[2 + j % 16];
		return xpu_mul((float)((int)(j < 16 ? x & 15u : x >> 4) - 8), sel_f16(sel_ld16(k.s)));
	}
	if (fmt == XPU_SEL_Q6_K)
		return sel_q6_K_value(k, c % 256);
	const uint8_t *b = k.b; /* q4_K: no scale apart from its block */
	uint32_t e = c % 256, p = e / 64, hi = (e % 64) / 32, sc, m;
	sel_scale_min_k4(2 * p + hi, b + 4, &sc, &m);
	float d1 = xpu_mul(sel_f16(sel_ld16(b)), (float)sc), m1 = xpu_mul(sel_f16(sel_ld16(b + 2)), (float)m);
	uint32_t x = b[16 + 32 * p + e % 32];
	return xpu_sub(xpu_mul(d1, (float)(hi ? x >> 4 : x & 15u)), m1);
}

/* An f32 row: 16-byte copies where both rows sit on 16 bytes, else words. */
static __device__ void sel_copy_f32_row(float *y, const uint8_t *row, uint32_t cols)
{
	const uint32_t t = threadIdx.x;
	if ((cols % 4) == 0 && (((uintptr_t)y | (uintptr_t)row) & 15) == 0) {
		const uint4 *src = (const uint4 *)row;
		uint4 *dst = (uint4 *)y;
		for (uint32_t c = t; c < cols / 4; c += XPU_GET_ROWS_BLOCK)
			dst[c] = src[c];
		return;
	}
	const uint32_t *src = (const uint32_t *)row;
	for (uint32_t c = t; c < cols; c += XPU_GET_ROWS_BLOCK)
		((uint32_t *)y)[c] = src[c];
}

extern "C" __global__ void __launch_bounds__(XPU_GET_ROWS_BLOCK)
get_rows(float *out, const uint8_t *table, const int32_t *ids, unsigned n, unsigned n_rows, unsigned cols,
	 unsigned code)
{
	const uint32_t fmt = code & ~XPU_SEL_RESIDENT;
	const bool resident = code & XPU_SEL_RESIDENT;
	const uint64_t g = xpu_group();
	if (g >= n)
		return;
	float *y = out + g * cols;
	const int32_t id = ids[g];
	if (id < 0 || (uint32_t)id >= n_rows) {
		for (uint32_t c = threadIdx.x; c < cols; c += XPU_GET_ROWS_BLOCK)
			y[c] = __uint_as_float(XPU_SEL_BAD_ROW);
		return;
	}
	/* a resident row is its blocks' bytes and the prefix's dword padding */
	const uint32_t blocks = fmt == XPU_SEL_Q4_K || fmt == XPU_SEL_Q6_K ? cols / 256 : cols / 32;
	const uint32_t sb = XPU_SEL_SCALE_BYTES(fmt), pad = resident ? (4 - blocks * sb % 4) % 4 : 0;
	const uint64_t row_bytes = fmt == XPU_SEL_F32 ? 4ull * cols : fmt == XPU_SEL_F16 ? 2ull * cols
				   : pad + (uint64_t)blocks * (fmt == XPU_SEL_Q4_K ? 144 : fmt == XPU_SEL_Q6_K ? 210
							       : fmt == XPU_SEL_Q8_0 ? 34 : 18);
	const uint8_t *row = table + (uint64_t)id * row_bytes;
	if (fmt == XPU_SEL_F32) {
		sel_copy_f32_row(y, row, cols);
		return;
	}
	for (uint32_t c = threadIdx.x; c < cols; c += XPU_GET_ROWS_BLOCK)
		y[c] = sel_row_value(row, fmt, resident, cols, c);
}

/* ---- argmax ---------------------------------------------------------------------------------- */

extern "C" __global__ void __launch_bounds__(XPU_ARGMAX_BLOCK)
argmax(int32_t *out, const uint32_t *x, unsigned rows, unsigned cols)
{
	const uint64_t r = xpu_group();
	if (r >= rows) /* the whole group leaves: no barrier is skipped by part of it */
		return;
	const uint32_t *row = x + r * cols;
	int64_t best = INT64_MIN;
	for (uint32_t i = threadIdx.x; i < cols; i += XPU_ARGMAX_BLOCK) {
		int64_t key = sel_key(row[i], i);
		best = key > best ? key : best;
	}
	best = xpu_workgroup_reduce<XPU_WG_MAX>(best);
	if (threadIdx.x == 0)
		out[r] = (int32_t)sel_index(best);
}

/* ---- top_k ----------------------------------------------------------------------------------- */

#define SEL_TOPK_PER (XPU_TOPK_MAX_EXPERTS / XPU_TOPK_BLOCK)

static __device__ __forceinline__ float sel_topk_weight(float e, float sum)
{
	float w = e / sum; /* IEEE, correctly rounded */
	return w != w ? __uint_as_float(XPU_SEL_BAD_ROW) : w;
}

/* Lane t's experts t, t + 32, ... in order, then the wave's butterfly. */
static __device__ float sel_topk_sum_all(const float *x, uint32_t n_expert, float m)
{
	float lane = 0.0f;
	for (uint32_t j = threadIdx.x; j < n_expert; j += XPU_TOPK_BLOCK)
		lane = xpu_add(lane, xm_exp(xpu_sub(x[j], m)));
	return xpu_workgroup_reduce<XPU_WG_ADD>(lane);
}

extern "C" __global__ void __launch_bounds__(XPU_TOPK_BLOCK)
top_k(int32_t *ids, float *weights, const float *xs, unsigned rows, unsigned n_expert, unsigned k, unsigned norm)
{
	const uint64_t r = xpu_group();
	if (r >= rows)
		return;
	const uint32_t t = threadIdx.x;
	const float *x = xs + r * n_expert;
	uint32_t bits[SEL_TOPK_PER], taken = 0, pick[XPU_TOPK_MAX_K];
#pragma unroll
	for (uint32_t q = 0; q < SEL_TOPK_PER; q++) {
		uint32_t j = t + q * XPU_TOPK_BLOCK;
		bits[q] = j < n_expert ? __float_as_uint(x[j]) : 0u;
	}
	for (uint32_t s = 0; s < k; s++) {
		int64_t best = INT64_MIN;
#pragma unroll
		for (uint32_t q = 0; q < SEL_TOPK_PER; q++) {
			uint32_t j = t + q * XPU_TOPK_BLOCK;
			int64_t key = sel_key(bits[q], j);
			if (j < n_expert && !(taken >> q & 1u) && key > best)
				best = key;
		}
		pick[s] = sel_index(xpu_workgroup_reduce<XPU_WG_MAX>(best));
		if (pick[s] % XPU_TOPK_BLOCK == t)
			taken |= 1u << (pick[s] / XPU_TOPK_BLOCK);
	}
	const float m = x[pick[0]];
	float sum = norm == XPU_TOPK_NORM_ALL ? sel_topk_sum_all(x, n_expert, m) : 0.0f;
	if (t != 0)
		return;
	float e[XPU_TOPK_MAX_K], run = 0.0f;
	for (uint32_t s = 0; s < k; s++) {
		e[s] = xm_exp(xpu_sub(x[pick[s]], m));
		run = xpu_add(run, e[s]);
	}
	if (norm == XPU_TOPK_NORM_K)
		sum = run;
	for (uint32_t s = 0; s < k; s++) {
		ids[r * k + s] = (int32_t)pick[s];
		weights[r * k + s] = sel_topk_weight(e[s], sum);
	}
}

/* ---- compact --------------------------------------------------------------------------------- */

/* One block of items from `first`: the kept ones (x > 0) placed from *base on, in order; *base
 * advances by the block's count. Every lane of the group calls it. */
static __device__ __forceinline__ void sel_keep_block(float *values, int32_t *indices, const float *x, uint32_t n,
						  uint32_t first, uint32_t *base)
{
	const uint32_t i = first + threadIdx.x;
	const float v = i < n ? x[i] : 0.0f;
	const int32_t keep = i < n && v > 0.0f;
	const uint32_t at = *base + (uint32_t)xpu_workgroup_scan<XPU_WG_ADD>(keep);
	*base += (uint32_t)xpu_workgroup_reduce<XPU_WG_ADD>(keep);
	if (keep) {
		values[at] = v;
		indices[at] = (int32_t)i;
	}
}

extern "C" __global__ void __launch_bounds__(XPU_COMPACT_BLOCK)
compact(float *values, int32_t *indices, int32_t *count, const float *x, unsigned n)
{
	if (xpu_group() != 0)
		return;
	uint32_t base = 0;
	for (uint32_t first = 0; first < n; first += XPU_COMPACT_BLOCK)
		sel_keep_block(values, indices, x, n, first, &base);
	if (threadIdx.x == 0)
		count[0] = (int32_t)base;
}

#define SEL_COMPACT_PER ((uint32_t)XPU_COMPACT_BLOCK * XPU_COMPACT_TRIPS)

extern "C" __global__ void __launch_bounds__(XPU_COMPACT_BLOCK)
compact_count(int32_t *scratch, const float *x, unsigned n)
{
	const uint64_t g = xpu_group();
	if (g * SEL_COMPACT_PER >= n)
		return;
	int32_t kept = 0;
	for (uint32_t k = 0; k < XPU_COMPACT_TRIPS; k++) {
		uint64_t i = g * SEL_COMPACT_PER + k * XPU_COMPACT_BLOCK + threadIdx.x;
		kept += i < n && x[i] > 0.0f;
	}
	kept = xpu_workgroup_reduce<XPU_WG_ADD>(kept);
	if (threadIdx.x == 0)
		scratch[g] = kept;
}

extern "C" __global__ void __launch_bounds__(XPU_COMPACT_BLOCK)
compact_offsets(int32_t *scratch, int32_t *count, unsigned groups)
{
	if (xpu_group() != 0)
		return;
	int32_t base = 0;
	for (uint32_t first = 0; first < groups; first += XPU_COMPACT_BLOCK) {
		const uint32_t i = first + threadIdx.x;
		const int32_t c = i < groups ? scratch[i] : 0;
		const int32_t off = base + xpu_workgroup_scan<XPU_WG_ADD>(c);
		base += xpu_workgroup_reduce<XPU_WG_ADD>(c);
		if (i < groups)
			scratch[i] = off;
	}
	if (threadIdx.x == 0)
		count[0] = base;
}

extern "C" __global__ void __launch_bounds__(XPU_COMPACT_BLOCK)
compact_scatter(float *values, int32_t *indices, const int32_t *scratch, const float *x, unsigned n)
{
	const uint64_t g = xpu_group();
	if (g * SEL_COMPACT_PER >= n)
		return;
	uint32_t base = (uint32_t)scratch[g];
	for (uint32_t k = 0; k < XPU_COMPACT_TRIPS; k++)
		sel_keep_block(values, indices, x, n, (uint32_t)g * SEL_COMPACT_PER + k * XPU_COMPACT_BLOCK, &base);
}

/* ---- expert_map ------------------------------------------------------------------------------ */

/* Counts by shared atomics (a sum: the same in any order), offsets by the workgroup scan, then
 * the pairs a block at a time: a pair's place is its expert's cursor plus the pairs of that
 * expert before it in the block, so each list is in token order. */
extern "C" __global__ void __launch_bounds__(XPU_EXPERT_MAP_BLOCK)
expert_map(int32_t *counts, int32_t *offsets, int32_t *tokens, int32_t *slots, const int32_t *ids,
	   unsigned n_tokens, unsigned k, unsigned n_expert)
{
	__shared__ uint32_t cursor[XPU_EXPERT_MAP_MAX_EXPERTS];
	__shared__ int32_t block_ids[XPU_EXPERT_MAP_BLOCK];
	if (xpu_group() != 0)
		return;
	const uint32_t t = threadIdx.x, pairs = n_tokens * k;
	for (uint32_t e = t; e < n_expert; e += XPU_EXPERT_MAP_BLOCK)
		cursor[e] = 0;
	__syncthreads();
	for (uint32_t p = t; p < pairs; p += XPU_EXPERT_MAP_BLOCK) {
		int32_t id = ids[p];
		if (id >= 0 && (uint32_t)id < n_expert)
			atomicAdd(&cursor[id], 1u);
	}
	__syncthreads();
	const int32_t c = t < n_expert ? (int32_t)cursor[t] : 0; /* n_expert <= block: one scan */
	const int32_t off = xpu_workgroup_scan<XPU_WG_ADD>(c);
	const int32_t total = xpu_workgroup_reduce<XPU_WG_ADD>(c);
	if (t < n_expert) {
		counts[t] = c;
		offsets[t] = off;
		cursor[t] = (uint32_t)off;
	}
	__syncthreads();
	for (uint32_t first = 0; first < pairs; first += XPU_EXPERT_MAP_BLOCK) {
		const uint32_t p = first + t;
		int32_t id = p < pairs ? ids[p] : -1;
		id = id >= 0 && (uint32_t)id < n_expert ? id : -1;
		block_ids[t] = id;
		__syncthreads();
		if (id >= 0) {
			uint32_t at = cursor[id];
			for (uint32_t l = 0; l < t; l++)
				at += block_ids[l] == id;
			tokens[at] = (int32_t)(p / k);
			slots[at] = (int32_t)(p % k);
		}
		__syncthreads();
		if (id >= 0)
			atomicAdd(&cursor[id], 1u);
		__syncthreads();
	}
	for (uint32_t at = (uint32_t)total + t; at < pairs; at += XPU_EXPERT_MAP_BLOCK)
		tokens[at] = slots[at] = -1;
}
