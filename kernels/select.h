/* select.h — the codes and fixed geometry of the selection kernels (get_rows, argmax, top_k,
 * compact, expert_map: src/ops/layer/select.c), shared by kernels/cpu/select.c,
 * kernels/cuda/select.cu and kernels/vulkan/<kernel>.comp + select.glsl. Included by C, CUDA
 * and GLSL alike, so it holds nothing but defines.
 *
 * The blocks are part of each kernel's definition (the lane order of top_k's sum over all
 * experts is the workgroup reduce's at XPU_TOPK_BLOCK), so they are constants here, the same
 * on every backend, and the launchers launch exactly these. */
#ifndef XPU_SELECT_H
#define XPU_SELECT_H

/* get_rows: the table's format (the `fmt` argument). */
#define XPU_SEL_F32 0
#define XPU_SEL_F16 1
#define XPU_SEL_Q8_0 2
#define XPU_SEL_Q4_0 3
#define XPU_SEL_Q4_K 4
#define XPU_SEL_Q6_K 5 /* a tied embedding: llama.cpp writes the output's q6_K there */
#define XPU_SEL_FORMATS 6

/* fmt | XPU_SEL_RESIDENT: the table's rows are resident (src/quant/resident.c: each row's
 * block scales first, padded to a dword, then the blocks' payloads), so a tied embedding reads
 * the output matrix the mat-vec reads. The scale of a block format: its bytes and where it
 * lies in the GGUF block (the format table's scale_bytes / scale_offset; the launcher checks
 * they agree). q4_K has none: its resident row is its GGUF row. */
#define XPU_SEL_RESIDENT 0x100u
#define XPU_SEL_SCALE_BYTES(f) ((f) == XPU_SEL_Q8_0 || (f) == XPU_SEL_Q4_0 || (f) == XPU_SEL_Q6_K ? 2u : 0u)
#define XPU_SEL_SCALE_AT(f) ((f) == XPU_SEL_Q6_K ? 208u : 0u)

/* The bits an id outside [0, n_rows) makes its whole output row: a quiet NaN. */
#define XPU_SEL_BAD_ROW 0x7fc00000u

#define XPU_GET_ROWS_BLOCK 256
#define XPU_ARGMAX_BLOCK 1024
#define XPU_TOPK_BLOCK 32
#define XPU_TOPK_MAX_EXPERTS 256
#define XPU_TOPK_MAX_K 8
/* top_k's `norm`: softmax over the k selected logits, or over all experts and then taken */
#define XPU_TOPK_NORM_K 1
#define XPU_TOPK_NORM_ALL 0

#define XPU_COMPACT_BLOCK 1024
#define XPU_COMPACT_TRIPS 4     /* the multi-group form: items per group = BLOCK * TRIPS */
#define XPU_COMPACT_ONE_MAX 65536 /* the one-launch form serves n up to this */

#define XPU_EXPERT_MAP_BLOCK 1024
#define XPU_EXPERT_MAP_MAX_EXPERTS 1024

#endif
