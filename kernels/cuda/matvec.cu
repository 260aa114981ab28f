/* matvec.cu — the five decode mat-vecs <fmt>_q8k_wave and their grouped-expert twins
 * <fmt>_q8k_id (kernels/table_quant.c), on matvec.cuh's walk. A group of 256 threads is 8
 * warps, each one row (wave v = group * 8 + warp), as kernels/cpu/quant_kernels.c numbers them. */
#include "matvec.cuh"

/* Pinned to 256 threads; at most 64 registers so four groups share an SM (a 4096-row
 * matrix's 512 groups then run in one wave on 132 SMs). */
#ifndef MV_MIN_GROUPS
#define MV_MIN_GROUPS 4
#endif

static __device__ __forceinline__ uint64_t mv_wave_index(uint32_t *lane)
{
	const uint32_t t = xpu_thread();
	*lane = t % 32;
	return xpu_group() * ((blockDim.x * blockDim.y * blockDim.z) / 32) + t / 32;
}

/* y[y_off + r] = row r of w . x */
template <class F>
static __device__ __forceinline__ void mv_wave(float *y, const uint8_t *w, const uint8_t *x, uint32_t rows,
					       uint32_t cols, uint32_t y_off)
{
	uint32_t lane;
	const uint64_t row = mv_wave_index(&lane);
	if (row >= rows)
		return;
	const uint32_t bpr = cols / F::ELEMS;
	const float v = mv_row_any<F>(w + row * mv_row_bytes<F>(bpr), x, bpr, lane);
	if (lane == 0)
		y[(uint64_t)y_off + row] = v;
}

/* Wave v is slot kk = v / rows, row r = v % rows of expert sel[kk]: slab row sel[kk] * rows + r
 * against the activation at q8_K block kk * x_row_blocks, into y[y_off + kk * rows + r]. An
 * expert outside [0, experts) writes NaN and reads nothing. */
template <class F>
static __device__ __forceinline__ void mv_id(float *y, const uint8_t *slab, const uint8_t *x, const int32_t *sel,
					     uint32_t experts, uint32_t used, uint32_t rows, uint32_t cols,
					     uint32_t x_row_blocks, uint32_t y_off)
{
	uint32_t lane;
	const uint64_t v = mv_wave_index(&lane);
	if (rows == 0 || v >= (uint64_t)used * rows)
		return;
	const uint64_t kk = v / rows, r = v % rows;
	float *out = y + (uint64_t)y_off + kk * rows + r;
	const int32_t e = sel[kk];
	if (e < 0 || (uint32_t)e >= experts) {
		if (lane == 0)
			*out = __int_as_float(0x7fc00000); /* C's NAN */
		return;
	}
	const uint32_t bpr = cols / F::ELEMS;
	const uint8_t *row = slab + ((uint64_t)e * rows + r) * mv_row_bytes<F>(bpr);
	const float val = mv_row_any<F>(row, x + kk * x_row_blocks * (uint64_t)Q8K_BYTES, bpr, lane);
	if (lane == 0)
		*out = val;
}

/* The entry points, spelled out so each kernel name can be found with grep. */

extern "C" __global__ void __launch_bounds__(MV_BLOCK, MV_MIN_GROUPS)
q4_0_q8k_wave(float *y, const uint8_t *w, const uint8_t *x, unsigned int rows, unsigned int cols,
              unsigned int y_off)
{
	mv_wave<mv_q4_0>(y, w, x, rows, cols, y_off);
}

extern "C" __global__ void __launch_bounds__(MV_BLOCK, MV_MIN_GROUPS)
q4_0_q8k_id(float *y, const uint8_t *slab, const uint8_t *x, const int32_t *sel, unsigned int experts,
            unsigned int used, unsigned int rows, unsigned int cols, unsigned int x_row_blocks,
            unsigned int y_off)
{
	mv_id<mv_q4_0>(y, slab, x, sel, experts, used, rows, cols, x_row_blocks, y_off);
}

extern "C" __global__ void __launch_bounds__(MV_BLOCK, MV_MIN_GROUPS)
q8_0_q8k_wave(float *y, const uint8_t *w, const uint8_t *x, unsigned int rows, unsigned int cols,
              unsigned int y_off)
{
	mv_wave<mv_q8_0>(y, w, x, rows, cols, y_off);
}

extern "C" __global__ void __launch_bounds__(MV_BLOCK, MV_MIN_GROUPS)
q8_0_q8k_id(float *y, const uint8_t *slab, const uint8_t *x, const int32_t *sel, unsigned int experts,
            unsigned int used, unsigned int rows, unsigned int cols, unsigned int x_row_blocks,
            unsigned int y_off)
{
	mv_id<mv_q8_0>(y, slab, x, sel, experts, used, rows, cols, x_row_blocks, y_off);
}

extern "C" __global__ void __launch_bounds__(MV_BLOCK, MV_MIN_GROUPS)
q4_K_q8k_wave(float *y, const uint8_t *w, const uint8_t *x, unsigned int rows, unsigned int cols,
              unsigned int y_off)
{
	mv_wave<mv_q4_K>(y, w, x, rows, cols, y_off);
}

extern "C" __global__ void __launch_bounds__(MV_BLOCK, MV_MIN_GROUPS)
q4_K_q8k_id(float *y, const uint8_t *slab, const uint8_t *x, const int32_t *sel, unsigned int experts,
            unsigned int used, unsigned int rows, unsigned int cols, unsigned int x_row_blocks,
            unsigned int y_off)
{
	mv_id<mv_q4_K>(y, slab, x, sel, experts, used, rows, cols, x_row_blocks, y_off);
}

extern "C" __global__ void __launch_bounds__(MV_BLOCK, MV_MIN_GROUPS)
q6_K_q8k_wave(float *y, const uint8_t *w, const uint8_t *x, unsigned int rows, unsigned int cols,
              unsigned int y_off)
{
	mv_wave<mv_q6_K>(y, w, x, rows, cols, y_off);
}

extern "C" __global__ void __launch_bounds__(MV_BLOCK, MV_MIN_GROUPS)
q6_K_q8k_id(float *y, const uint8_t *slab, const uint8_t *x, const int32_t *sel, unsigned int experts,
            unsigned int used, unsigned int rows, unsigned int cols, unsigned int x_row_blocks,
            unsigned int y_off)
{
	mv_id<mv_q6_K>(y, slab, x, sel, experts, used, rows, cols, x_row_blocks, y_off);
}

extern "C" __global__ void __launch_bounds__(MV_BLOCK, MV_MIN_GROUPS)
iq4_nl_q8k_wave(float *y, const uint8_t *w, const uint8_t *x, unsigned int rows, unsigned int cols,
                unsigned int y_off)
{
	mv_wave<mv_iq4_nl>(y, w, x, rows, cols, y_off);
}

extern "C" __global__ void __launch_bounds__(MV_BLOCK, MV_MIN_GROUPS)
iq4_nl_q8k_id(float *y, const uint8_t *slab, const uint8_t *x, const int32_t *sel, unsigned int experts,
              unsigned int used, unsigned int rows, unsigned int cols, unsigned int x_row_blocks,
              unsigned int y_off)
{
	mv_id<mv_iq4_nl>(y, slab, x, sel, experts, used, rows, cols, x_row_blocks, y_off);
}
