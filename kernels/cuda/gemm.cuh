/* gemm.cuh — what the prefill GEMMs share: the grouped forms' arguments and the walk from a token
 * tile to its expert (gemm.cu's gemm_id on dp4a, gemm_mma.cu's on the tensor cores), and the
 * tensor cores' int8 step (gemm_mma.cu, gemm_mma_staged.cu). */
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

#ifndef XPU_HIP /* PTX: the HIP build of these files has no such form */
/* mma.m16n8k32 s8, accumulating from 0: A rows g, g + 8 at k 4c.. (a0, a1) and 16 + 4c.. (a2,
 * a3), B token g at k 4c.. (b0) and 16 + 4c.. (b1). */
static __device__ __forceinline__ void mma_s8(int c[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
					      uint32_t b0, uint32_t b1)
{
	asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
		     "{%10,%11,%12,%13};"
		     : "=r"(c[0]), "=r"(c[1]), "=r"(c[2]), "=r"(c[3])
		     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "r"(0), "r"(0), "r"(0), "r"(0));
}
#endif

#endif
