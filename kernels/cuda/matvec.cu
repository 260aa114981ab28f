/* matvec.cu — the decode mat-vecs <fmt>_q8k_wave, their grouped-expert twins <fmt>_q8k_id and
 * the MoE tails <fmt>_q8k_tail[_norm] (src/ops/quant/table.c), one set per row of
 * src/quant/format_list.h, on matvec.cuh's walk.
 * A group of 256 threads is 8 warps, each one row (wave v = group * 8 + warp), as
 * kernels/cpu/quant_kernels.c numbers them. */
#include "matvec.cuh"
#include "norm.cuh"
#include "../../src/quant/format_list.h"

/* Pinned to 256 threads; at most 64 registers so four groups share an SM (a 4096-row
 * matrix's 512 groups then run in one wave on 132 SMs). */
#ifndef MV_MIN_GROUPS
#define MV_MIN_GROUPS 4
#endif

/* The grid's waves stride over the rows: wave v of W serves rows v, v + W, v + 2W, ... A grid
 * of one wave per row is the plain form; a grid the size of what is resident streams. */
static __device__ __forceinline__ uint64_t mv_wave_index(uint32_t *lane, uint64_t *waves)
{
	const uint32_t t = xpu_thread(), per_group = (blockDim.x * blockDim.y * blockDim.z) / 32;
	*lane = t % 32;
	*waves = (uint64_t)gridDim.x * gridDim.y * gridDim.z * per_group;
	return xpu_group() * per_group + t / 32;
}

/* y[y_off + r] = row r of w . x */
template <class F>
static __device__ __forceinline__ void mv_wave(float *y, const uint8_t *w, const uint8_t *x, uint32_t rows,
					       uint32_t cols, uint32_t y_off)
{
	uint32_t lane;
	uint64_t waves;
	const uint64_t first = mv_wave_index(&lane, &waves);
	const uint32_t bpr = cols / F::ELEMS;
	const mv_dense_rows r = { w, x, y + y_off, mv_row_bytes<F>(bpr) };
	mv_stream_any<F, true>(r, mv_aligned16(w, x), bpr, first, waves, rows, lane);
}

/* Slot v = kk * rows + r: row r of expert sel[kk], against the activation at q8_K block
 * kk * x_row_blocks, into y[y_off + v]. An expert outside [0, experts) writes NaN; its loads
 * read the slab's first row, which is there. */
struct mv_id_rows {
	const uint8_t *slab, *x;
	float *y;
	const int32_t *sel;
	uint64_t row_bytes, x_slot_bytes;
	uint32_t experts, rows;
	/* slot kk = v / rows, row v % rows of expert sel[kk] (32-bit division when v fits) */
	__device__ __forceinline__ mv_place place(uint64_t v) const
	{
		uint64_t kk, r;
		if ((v >> 32) == 0) {
			kk = (uint32_t)v / rows;
			r = (uint32_t)v - (uint32_t)kk * rows;
		} else {
			kk = v / rows;
			r = v % rows;
		}
		const int32_t e = sel[kk];
		const bool bad = e < 0 || (uint32_t)e >= experts;
		return mv_place{ bad ? slab : slab + ((uint64_t)e * rows + r) * row_bytes, x + kk * x_slot_bytes, bad };
	}
	__device__ __forceinline__ void store(uint64_t v, float val, bool bad) const
	{
		y[v] = bad ? __int_as_float(0x7fc00000) : val; /* C's NAN */
	}
};

template <class F>
static __device__ __forceinline__ void mv_id(float *y, const uint8_t *slab, const uint8_t *x, const int32_t *sel,
					     uint32_t experts, uint32_t used, uint32_t rows, uint32_t cols,
					     uint32_t x_row_blocks, uint32_t y_off)
{
	uint32_t lane;
	uint64_t waves;
	const uint64_t first = mv_wave_index(&lane, &waves);
	if (rows == 0)
		return;
	const uint32_t bpr = cols / F::ELEMS;
	const mv_id_rows r = { slab, x, y + y_off, sel, mv_row_bytes<F>(bpr), (uint64_t)x_row_blocks * Q8K_BYTES,
			       experts, rows };
	mv_stream_any<F, false>(r, mv_aligned16(slab, x), bpr, first, waves, (uint64_t)used * rows, lane);
}

/* The down bank and moe_combine in one launch: wave v is residual element r = v, which takes
 * row r of every slot's expert against that slot's activation (each dot mv_rowwise's, the id
 * kernel's value bit for bit), then y[r] = y[r] + s, s = +0, s = s + w[kk] * dot_kk in slot
 * order: moe_combine's order, so the two launches' result exactly. An expert outside
 * [0, experts) makes its dot NaN, and so y[r]. */
template <class F, bool V>
static __device__ __forceinline__ void mv_tail_walk(float *y, const uint8_t *slab, const uint8_t *x,
						    const int32_t *sel, const float *w, uint32_t experts,
						    uint32_t used, uint32_t rows, uint32_t bpr,
						    uint64_t x_slot_bytes, uint64_t first, uint64_t stride, int lane)
{
	const uint64_t prefix = mv_prefix<F>(bpr), row_bytes = mv_row_bytes<F>(bpr);
	for (uint64_t r = first; r < rows; r += stride) {
		float s = 0.0f;
		for (uint32_t kk = 0; kk < used; kk++) {
			const int32_t e = sel[kk];
			const bool bad = e < 0 || (uint32_t)e >= experts;
			const uint8_t *row = slab + (bad ? 0 : ((uint64_t)e * rows + r) * row_bytes);
			float d = mv_row<F, V>(row, prefix, x + kk * x_slot_bytes, bpr, lane);
			if (bad)
				d = __int_as_float(0x7fc00000);
			s = xpu_add(s, xpu_mul(w[kk], d));
		}
		if (lane == 0)
			y[r] = xpu_add(y[r], s);
	}
}

template <class F>
static __device__ __forceinline__ void mv_tail(float *y, const uint8_t *slab, const uint8_t *x, const int32_t *sel,
					       const float *w, uint32_t experts, uint32_t used, uint32_t rows,
					       uint32_t cols, uint32_t x_row_blocks)
{
	uint32_t lane;
	uint64_t waves;
	const uint64_t first = mv_wave_index(&lane, &waves);
	const uint32_t bpr = cols / F::ELEMS;
	const uint64_t xs = (uint64_t)x_row_blocks * Q8K_BYTES;
	/* 16-byte loads where every slot's activation and every row start on 16 bytes */
	if (F::VEC && mv_aligned16(slab, x) && (xs & 15) == 0 && (mv_prefix<F>(bpr) & 15) == 0 &&
	    (mv_row_bytes<F>(bpr) & 15) == 0)
		mv_tail_walk<F, true>(y, slab, x, sel, w, experts, used, rows, bpr, xs, first, waves, lane);
	else
		mv_tail_walk<F, false>(y, slab, x, sel, w, experts, used, rows, bpr, xs, first, waves, lane);
}

/* The tail, then the next layer's norm and pack of the residual it finished, in the same launch:
 * each group, its rows written and fenced, counts itself in; the group that counts last (every
 * other group's rows are then in memory) packs rms_norm_q8k of the whole residual into xq, with
 * rms_norm_q8k's steps in rms_norm_q8k's order (norm.cuh), and sets the count back to 0 for the
 * next launch. The residual is read volatile: other SMs wrote it, past this one's L1. The
 * norm takes its loop path, not its register path, which spilled in these kernels. */
/* Out of line: inlined into the tail, its registers spilled the tail's walk (sm_80 / sm_89). */
static __device__ __noinline__ void mv_tail_norm_row(uint8_t *xq, const volatile float *h, const float *weight,
						     uint32_t rows, float eps)
{
	norm_q8k_blocks<false>(xq, NULL, h, weight, rows / 256, norm_rms_factor(h, rows, eps));
}

template <class F>
static __device__ __forceinline__ void mv_tail_norm(float *y, const uint8_t *slab, const uint8_t *x,
						    const int32_t *sel, const float *w, uint32_t experts,
						    uint32_t used, uint32_t rows, uint32_t cols, uint32_t x_row_blocks,
						    uint8_t *xq, const float *weight, uint32_t *count, float eps)
{
	__shared__ bool last;
	mv_tail<F>(y, slab, x, sel, w, experts, used, rows, cols, x_row_blocks);
	__threadfence();
	__syncthreads();
	if (threadIdx.x == 0)
		last = atomicAdd(count, 1u) == gridDim.x * gridDim.y * gridDim.z - 1u;
	__syncthreads();
	if (!last) /* the same in the whole group */
		return;
	__threadfence();
	mv_tail_norm_row(xq, y, weight, rows, eps);
	if (threadIdx.x == 0)
		*count = 0u;
}

/* Groups an SM for a format's grouped form: MV_MIN_GROUPS unless its walk needs more registers. */
template <class F> struct mv_id_groups {
	static constexpr int N = MV_MIN_GROUPS;
};
/* q4_K's grouped form at three groups an SM: at four (64 registers) its expert lookup
 * spilled 36 bytes */
template <> struct mv_id_groups<mv_q4_K> {
	static constexpr int N = 3;
};
/* q5_K's likewise: at four it spilled 4 bytes (sm_90) */
template <> struct mv_id_groups<mv_q5_K> {
	static constexpr int N = 3;
};

/* The tail-and-norm at three groups an SM: at four, q5_0's and iq4_nl's spilled 4-20 bytes
 * (sm_80, sm_89). Its grid is a group per 8 residual elements (256 for a 2048-wide model), so
 * fewer than three groups an SM fill the device anyway. */
#define MV_TAIL_NORM_GROUPS 3

/* The entry points, one pair per row of quant/format_list.h; each trait's block geometry
 * and walk (STREAM) must be the row's. */
#define MV_ENTRY_POINTS(name, type, elems, bytes, sb, soff, pay, streams, ...)                   \
	static_assert(mv_##name::ELEMS == elems && mv_##name::SCALE == sb && mv_##name::PAY == pay, \
		      #name ": matvec.cuh's block geometry is not format_list.h's");           \
	static_assert(mv_##name::STREAM == (streams != 0),                                       \
		      #name ": matvec.cuh's STREAM is not format_list.h's streams (the launcher's grid)"); \
	extern "C" __global__ void __launch_bounds__(MV_BLOCK, MV_MIN_GROUPS)                   \
	name##_q8k_wave(float *y, const uint8_t *w, const uint8_t *x, unsigned int rows,        \
			unsigned int cols, unsigned int y_off)                                   \
	{                                                                                        \
		mv_wave<mv_##name>(y, w, x, rows, cols, y_off);                                  \
	}                                                                                        \
	extern "C" __global__ void __launch_bounds__(MV_BLOCK, mv_id_groups<mv_##name>::N)      \
	name##_q8k_id(float *y, const uint8_t *slab, const uint8_t *x, const int32_t *sel,      \
		      unsigned int experts, unsigned int used, unsigned int rows, unsigned int cols, \
		      unsigned int x_row_blocks, unsigned int y_off)                             \
	{                                                                                        \
		mv_id<mv_##name>(y, slab, x, sel, experts, used, rows, cols, x_row_blocks, y_off); \
	}                                                                                        \
	extern "C" __global__ void __launch_bounds__(MV_BLOCK, mv_id_groups<mv_##name>::N)      \
	name##_q8k_tail(float *y, const uint8_t *slab, const uint8_t *x, const int32_t *sel,    \
			const float *w, unsigned int experts, unsigned int used, unsigned int rows, \
			unsigned int cols, unsigned int x_row_blocks)                            \
	{                                                                                        \
		mv_tail<mv_##name>(y, slab, x, sel, w, experts, used, rows, cols, x_row_blocks); \
	}                                                                                        \
	extern "C" __global__ void __launch_bounds__(MV_BLOCK, MV_TAIL_NORM_GROUPS)            \
	name##_q8k_tail_norm(float *y, const uint8_t *slab, const uint8_t *x, const int32_t *sel, \
			     const float *w, unsigned int experts, unsigned int used, unsigned int rows, \
			     unsigned int cols, unsigned int x_row_blocks, uint8_t *xq,           \
			     const float *weight, unsigned int *count, float eps)                 \
	{                                                                                        \
		mv_tail_norm<mv_##name>(y, slab, x, sel, w, experts, used, rows, cols, x_row_blocks, \
					xq, weight, count, eps);                                 \
	}
XPU_FORMAT_LIST(MV_ENTRY_POINTS)
#undef MV_ENTRY_POINTS
