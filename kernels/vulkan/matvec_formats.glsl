/* matvec_formats.glsl — matvec.glsl's per-format constants. The block sizes come with the
 * format's row of src/quant/format_list.h: vulkan.mk writes them into each generated
 * <fmt>_q8k_<kind>.comp with its FMT_<TYPE> (ELEMS elements a block, SCALE bytes a block in
 * the row's scale prefix, 0 where the block is its own payload, PAYW payload words a block).
 * The default tuning is chosen here, by the one FMT_* the kernel defines. */
#ifndef XPU_MATVEC_FORMATS_GLSL
#define XPU_MATVEC_FORMATS_GLSL

#if !defined(ELEMS) || !defined(SCALE) || !defined(PAYW)
#error "matvec.glsl: ELEMS, SCALE and PAYW come from the format's row (vulkan.mk)"
#endif

/* Per format: U_FMT steps in flight by default (the fastest of U = 1..4 on an H200's NVIDIA
 * driver, dot4 kernels each timed in a process of its own, docs/PERF.md: q4_0 1 (2 until a
 * later sweep of three alternated rounds, 2-7 % faster at 1 in all four cases), q8_0 1, q4_K
 * 1 (3 until F16 = 1 (matvec_tuning.glsl) shortened its body: then U 1 took 32 registers
 * where 3 took 61, and ran 10.6 / 9.8 us against 11.6 / 9.8 with independent launches), q6_K
 * 2; iq4_nl 1 with its codebook in shared memory, matvec_kv.glsl), VEC_FMT whether it loads
 * 16 bytes at a time where the layout allows (q4_K's 144-byte blocks, q6_K's 208-byte
 * payloads; q5_0's 20-byte payloads are read as words, its VEC the activation's). G (lanes
 * per block) is fixed by the layout except for q8_0's, a tuning constant
 * (matvec_tuning.glsl). */
#if defined(FMT_Q4_0) || defined(FMT_IQ4_NL) || defined(FMT_Q5_0)
#define G_FMT 1u
#define U_FMT 1u
#define VEC_FMT true
#elif defined(FMT_Q8_0)
#define U_FMT 1u
#define VEC_FMT true
#elif defined(FMT_Q4_K) || defined(FMT_Q5_K)
#define G_FMT 8u
#define U_FMT 1u
#define VEC_FMT true
#elif defined(FMT_Q6_K)
#define G_FMT 8u
#define U_FMT 2u
#define VEC_FMT true
#else
#error "matvec.glsl: define one FMT_*"
#endif

#endif
