/* gemm.h — the fixed geometry of the prefill GEMMs over resident weights (<fmt>_q8k_gemm_t64,
 * _t128 and their grouped twins <fmt>_q8k_gemm_id_t64, _t128: src/ops/gemm/table.c), shared by
 * kernels/cpu/gemm.c, kernels/cuda/gemm.cu and kernels/vulkan/matvec.glsl. Included by C,
 * CUDA and GLSL alike, so it holds nothing but defines.
 *
 * A workgroup is XPU_GEMM_BLOCK threads, one 32-lane wave per weight row of its row tile
 * (XPU_GEMM_ROWS rows), over one token tile (64 or 128 tokens, the kernel's name says which).
 * Group g of a launch is row tile g % row_tiles of token tile g / row_tiles. */
#ifndef XPU_GEMM_H
#define XPU_GEMM_H

#define XPU_GEMM_BLOCK 256
#define XPU_GEMM_ROWS 8 /* XPU_GEMM_BLOCK / 32 */

/* The tensor-core forms <fmt>_q8k_gemm_mma_t<TILE> (CUDA, capability mma_int8): a warp is 16
 * rows x 16 tokens, a group of 8 warps 32 rows x 64 tokens (t64) or 16 rows x 128 tokens
 * (t128); group g is row tile g % ceil(rows / ROWS) of token tile g / ceil(rows / ROWS). */
#define XPU_GEMM_MMA_ROWS(tile) (2048 / (tile))
/* The formats they serve: those whose 32-element block is one k = 32 step, q4_K and q5_K (a
 * sub-block of 32 a step) and q6_K (a sub-block of 16 a k = 16 step). */
#define XPU_GEMM_MMA_FORMATS(X) X(q4_0) X(q8_0) X(iq4_nl) X(q5_0) X(q4_K) X(q5_K) X(q6_K)

/* The staged tensor-core form <fmt>_q8k_gemm_mmas_t64 (CUDA, mma_int8): a group of 8 warps is 64
 * rows x 64 tokens, group g row tile g % ceil(rows / 64) of token tile g / ceil(rows / 64), each
 * block step's operands copied to shared memory ahead of the warps (kernels/cuda/
 * gemm_mma_staged.cu). The formats it serves: */
#define XPU_GEMM_MMAS_ROWS 64
#define XPU_GEMM_MMAS_FORMATS(X) X(q4_0) X(q8_0) X(iq4_nl) X(q5_0)

#endif
