/* format_list.h — the one list of served decode formats, one row each, in the order
 * xpu.formats() gives them. Every per-format thing is made from these rows: the format table
 * (formats.c), the kernel table entries (src/ops/quant/table.c, src/ops/quant/table_dot4.c,
 * src/ops/gemm/table.c: the prefill GEMMs, which reuse each format's mat-vec body), the CPU and
 * CUDA/HIP entry points and the portable CPU list, the Vulkan shader sources
 * (kernels/vulkan/vulkan.mk reads this file) and, through xpu.formats(), every Lua list of
 * formats. A new format is a row here, its reference quantize / dequantize in quantize.c
 * (xpu_quant_<name>, xpu_deq_<name>), and its kernel bodies per backend: rows_<name> in
 * kernels/cpu/matvec.c (SIMD rows in matvec_avx2.c are optional: without them the kernels run
 * the portable body), the trait mv_<name> in kernels/cuda/matvec.cuh (its geometry and STREAM
 * are checked against the row), the Vulkan body kernels/vulkan/matvec_<fmt>.glsl under
 * FMT_<TYPE> with its default tuning in matvec_formats.glsl (vulkan.mk writes the block sizes
 * from the row).
 * docs/ARITHMETIC.md is the spec of each layout.
 *
 * XPU_FORMAT(name, TYPE, block_elems, block_bytes, scale_bytes, scale_offset, payload_bytes,
 *            streams, cpu, cuda, vulkan)
 *   name          ggml's spelling, also the kernel name stem (<name>_q8k_wave)
 *   TYPE          the GGML_<TYPE> number of ggml_types.h
 *   scale_*       the scale at one end of the block (offset 0 or the tail), 0 bytes: none
 *   payload_bytes block_bytes - scale_bytes: the resident row's per-block payload
 *   streams       1: on CUDA / HIP its dense wave walks several rows (a resident grid)
 *   cpu cuda vulkan  the decode kernels each backend builds (XPU_FK_* bits; hip is cuda's)
 * Each row must stay on one line: vulkan.mk reads the names with sed. */
#ifndef XPU_FORMAT_LIST_H
#define XPU_FORMAT_LIST_H
#define XPU_FORMAT_LIST(X)                                                                     \
X(q4_0,   Q4_0,    32,  18, 2,   0,  16, 1, XPU_FK_INT, XPU_FK_INT, XPU_FK_INT | XPU_FK_DOT4) \
X(q8_0,   Q8_0,    32,  34, 2,   0,  32, 1, XPU_FK_INT, XPU_FK_INT, XPU_FK_INT | XPU_FK_DOT4) \
X(q4_K,   Q4_K,   256, 144, 0,   0, 144, 0, XPU_FK_INT, XPU_FK_INT, XPU_FK_INT | XPU_FK_DOT4) \
X(q6_K,   Q6_K,   256, 210, 2, 208, 208, 0, XPU_FK_INT, XPU_FK_INT, XPU_FK_INT | XPU_FK_DOT4) \
X(iq4_nl, IQ4_NL,  32,  18, 2,   0,  16, 0, XPU_FK_INT, XPU_FK_INT, XPU_FK_INT | XPU_FK_DOT4) \
X(q5_0,   Q5_0,    32,  22, 2,   0,  20, 1, XPU_FK_INT, XPU_FK_INT, XPU_FK_INT | XPU_FK_DOT4) \
X(q5_K,   Q5_K,   256, 176, 0,   0, 176, 0, XPU_FK_INT, XPU_FK_INT, XPU_FK_INT | XPU_FK_DOT4)

/* The decode kernels a backend builds for a format. */
#define XPU_FK_WAVE 1u      /* <name>_q8k_wave */
#define XPU_FK_ID 2u        /* <name>_q8k_id and <name>_q8k_tail[_norm] (the down bank + combine [+ next norm]) */
#define XPU_FK_DOT4 4u      /* <name>_q8k_{wave,id,tail,tail_norm}_dot4 (packed int8 dot) */
#define XPU_FK_INT (XPU_FK_WAVE | XPU_FK_ID)
#endif
