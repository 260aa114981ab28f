/* gemm.cuh — what the grouped prefill GEMMs share (gemm.cu's gemm_id on dp4a, gemm_mma.cu's on
 * the tensor cores): the launch's arguments and the walk from a token tile to its expert. */
#ifndef XPU_GEMM_CUH
#define XPU_GEMM_CUH

#include "xpu_cuda.cuh"

/* Token tile ti of the grouped launch: the expert whose tiles hold it and the tile's first
 * list entry after the expert's offset; false past every tile. The same walk in every lane. */
static __device__ __forceinline__ bool gemm_expert_tile(const int32_t *counts, uint32_t experts, uint32_t tile,
							uint64_t ti, uint32_t *e, uint64_t *j0)
{
	for (uint32_t k = 0; k < experts; k++) {
		const int32_t c = counts[k];
		const uint64_t n = c > 0 ? ((uint64_t)c + tile - 1) / tile : 0;
		if (ti < n) {
			*e = k;
			*j0 = ti * tile;
			return true;
		}
		ti -= n;
	}
	return false;
}

struct gemm_id_args {
	float *y;
	const uint8_t *slab, *x;
	const int32_t *counts, *offsets, *ltok, *lslot;
	uint32_t experts, used, tokens, rows, cols, per_slot;
};

#endif
