/* gemm.cu — the prefill GEMMs <fmt>_q8k_gemm_t{64,128} and their grouped twins
 * <fmt>_q8k_gemm_id_t{64,128} (src/ops/gemm/table.c), one set per row of
 * src/quant/format_list.h, on matvec.cuh's format traits. A group is 8 warps, warp w the
 * weight row w of the group's row tile (kernels/gemm.h); the warp walks its row once per
 * GEMM_NT tokens of the tile, each weight step loaded once and dotted with every one of those
 * tokens, each token's value delivered to its own accumulator exactly as the mat-vec's walk
 * does, then reduced the mat-vec's way: every output is the decode mat-vec's, bit for bit.
 * The integer dots are dp4a (the device has dot4_i8 wherever these are built: sm_80 on). */
#include "matvec.cuh"
#include "gemm.cuh"
#include "../gemm.h"
#include "../../src/quant/format_list.h"

/* Tokens a warp's walk serves at once: that many accumulators a lane. */
#ifndef GEMM_NT
#define GEMM_NT 4
#endif

/* Row `row` against the NT activations xs[]: out[j] = the mat-vec's value of row . xs[j].
 * Every lane of the warp calls it (the shuffles); blocks past the row are neither loaded nor
 * added, as in mv_row. */
template <class F, bool V>
static __device__ __forceinline__ void gemm_row(const uint8_t *row, uint64_t prefix, const uint8_t *const *xs,
						uint32_t bpr, int lane, float *out)
{
	constexpr int B = 32 / F::G;
	const int grp = lane / F::G, sub = lane % F::G;
	const uint8_t *pay = row + prefix;
	const uint32_t steps = (bpr + B - 1) / B;
	float acc[GEMM_NT];
#pragma unroll
	for (int j = 0; j < GEMM_NT; j++)
		acc[j] = 0.0f;
	for (uint32_t t = 0; t < steps; t++) {
		const uint32_t b = t * B + grp, bc = b < bpr ? b : 0;
		const typename F::W w = F::template load<V>(row, pay, bc, sub);
#pragma unroll
		for (int j = 0; j < GEMM_NT; j++) {
			const float v = F::template value<V>(w, xs[j], bc, sub);
			acc[j] = deliver<F::G>(acc[j], v, t, lane, bpr);
		}
	}
#pragma unroll
	for (int j = 0; j < GEMM_NT; j++)
		out[j] = wave_reduce(acc[j]);
}

/* 16-byte loads need the rows, their payloads and the activations on 16 bytes (the kernel
 * files are one translation unit, in name order: matvec.cu's twin comes after this one). */
template <class F>
static __device__ __forceinline__ bool gemm_vec(const void *w, const void *x, uint32_t bpr)
{
	return F::VEC && (((uintptr_t)w | (uintptr_t)x) & 15) == 0 && (mv_prefix<F>(bpr) & 15) == 0 && (mv_row_bytes<F>(bpr) & 15) == 0;
}

/* The warp's row tile and token tile of the launch (kernels/gemm.h's numbering). */
static __device__ __forceinline__ uint64_t gemm_tiles(uint32_t rows, uint32_t *row, int *lane)
{
	const uint32_t t = xpu_thread(), row_tiles = (rows + XPU_GEMM_ROWS - 1) / XPU_GEMM_ROWS;
	const uint64_t g = xpu_group();
	*lane = (int)(t % 32);
	*row = (uint32_t)(g % row_tiles) * XPU_GEMM_ROWS + t / 32;
	return g / row_tiles;
}

/* y[t * rows + r] = row r of w . token t's q8_K row, for the tile's tokens t */
template <class F, bool V>
static __device__ void gemm_tile(float *y, const uint8_t *w, const uint8_t *x, uint32_t rows, uint32_t cols,
				 uint32_t tokens, uint32_t tile)
{
	uint32_t r;
	int lane;
	const uint64_t tt = gemm_tiles(rows, &r, &lane);
	if (r >= rows) /* the whole warp: its row is past the matrix */
		return;
	const uint32_t bpr = cols / F::ELEMS, xrow = cols / 256 * Q8K_BYTES;
	const uint64_t t0 = tt * tile, t1 = t0 + tile < tokens ? t0 + tile : tokens;
	const uint8_t *row = w + (uint64_t)r * mv_row_bytes<F>(bpr);
	for (uint64_t c = t0; c < t1; c += GEMM_NT) {
		const uint8_t *xs[GEMM_NT];
		float out[GEMM_NT];
#pragma unroll
		for (int j = 0; j < GEMM_NT; j++) /* a token past the tile reads the chunk's first */
			xs[j] = x + (c + j < t1 ? c + j : c) * xrow;
		gemm_row<F, V>(row, mv_prefix<F>(bpr), xs, bpr, lane, out);
#pragma unroll
		for (int j = 0; j < GEMM_NT; j++)
			if (lane == 0 && c + j < t1)
				y[(c + j) * rows + r] = out[j];
	}
}

template <class F>
static __device__ __forceinline__ void gemm_any(float *y, const uint8_t *w, const uint8_t *x, uint32_t rows,
						uint32_t cols, uint32_t tokens, uint32_t tile)
{
	if (gemm_vec<F>(w, x, cols / F::ELEMS))
		gemm_tile<F, true>(y, w, x, rows, cols, tokens, tile);
	else
		gemm_tile<F, false>(y, w, x, rows, cols, tokens, tile);
}

/* For each listed pair (t, s) of the tile's expert e: y[(t * used + s) * rows + r] = row r of
 * expert e . x row (per_slot ? pair : t). A list entry past the pairs, or naming a token or
 * slot out of range, is passed over (nothing written). */
template <class F, bool V>
static __device__ void gemm_id_tile(const gemm_id_args &a, uint32_t tile)
{
	uint32_t r, e;
	int lane;
	uint64_t j0;
	const uint64_t ti = gemm_tiles(a.rows, &r, &lane);
	if (r >= a.rows || !gemm_expert_tile(a.counts, a.experts, tile, ti, &e, &j0))
		return;
	const uint32_t bpr = a.cols / F::ELEMS, xrow = a.cols / 256 * Q8K_BYTES;
	const uint64_t pairs = (uint64_t)a.tokens * a.used, count = (uint64_t)a.counts[e];
	const uint64_t j1 = j0 + tile < count ? j0 + tile : count, off = (uint64_t)(int64_t)a.offsets[e];
	const uint8_t *row = a.slab + ((uint64_t)e * a.rows + r) * mv_row_bytes<F>(bpr);
	for (uint64_t c = j0; c < j1; c += GEMM_NT) {
		const uint8_t *xs[GEMM_NT];
		uint64_t dst[GEMM_NT];
		bool live[GEMM_NT];
		float out[GEMM_NT];
#pragma unroll
		for (int j = 0; j < GEMM_NT; j++) {
			const uint64_t p = off + c + j;
			live[j] = c + j < j1 && p < pairs;
			const int32_t t = live[j] ? a.ltok[p] : 0, s = live[j] ? a.lslot[p] : 0;
			live[j] = live[j] && t >= 0 && (uint32_t)t < a.tokens && s >= 0 && (uint32_t)s < a.used;
			const uint64_t pair = live[j] ? (uint64_t)t * a.used + (uint32_t)s : 0;
			dst[j] = pair * a.rows + r;
			xs[j] = a.x + (a.per_slot ? pair : (live[j] ? (uint64_t)t : 0)) * xrow;
		}
		gemm_row<F, V>(row, mv_prefix<F>(bpr), xs, bpr, lane, out);
#pragma unroll
		for (int j = 0; j < GEMM_NT; j++)
			if (lane == 0 && live[j])
				a.y[dst[j]] = out[j];
	}
}

template <class F>
static __device__ __forceinline__ void gemm_id_any(const gemm_id_args &a, uint32_t tile)
{
	if (gemm_vec<F>(a.slab, a.x, a.cols / F::ELEMS))
		gemm_id_tile<F, true>(a, tile);
	else
		gemm_id_tile<F, false>(a, tile);
}

#define GEMM_TILE_ENTRIES(name, tile)                                                            \
	extern "C" __global__ void __launch_bounds__(XPU_GEMM_BLOCK)                             \
	name##_q8k_gemm_t##tile(float *y, const uint8_t *w, const uint8_t *x, unsigned int rows,  \
				unsigned int cols, unsigned int tokens)                          \
	{                                                                                        \
		gemm_any<mv_##name>(y, w, x, rows, cols, tokens, tile);                          \
	}                                                                                        \
	extern "C" __global__ void __launch_bounds__(XPU_GEMM_BLOCK)                             \
	name##_q8k_gemm_id_t##tile(float *y, const uint8_t *slab, const uint8_t *x, const int32_t *counts, \
				   const int32_t *offsets, const int32_t *ltok, const int32_t *lslot, \
				   unsigned int experts, unsigned int used, unsigned int tokens,  \
				   unsigned int rows, unsigned int cols, unsigned int per_slot)   \
	{                                                                                        \
		const gemm_id_args a = { y, slab, x, counts, offsets, ltok, lslot,               \
					 experts, used, tokens, rows, cols, per_slot };          \
		gemm_id_any<mv_##name>(a, tile);                                                 \
	}
#define GEMM_ENTRIES(name, ...) GEMM_TILE_ENTRIES(name, 64) GEMM_TILE_ENTRIES(name, 128)
XPU_FORMAT_LIST(GEMM_ENTRIES)
#undef GEMM_ENTRIES
#undef GEMM_TILE_ENTRIES
