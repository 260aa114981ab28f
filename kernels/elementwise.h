/* elementwise.h — the codes and the launch geometry of the elementwise layer kernels (add, mul,
 * swiglu, geglu, rope, swiglu_q8k: src/ops/layer/elementwise.c). Included by C, CUDA and GLSL
 * alike, so it holds nothing but defines. The arithmetic is one function per element
 * (kernels/xmath.h), so how the elements are spread over a grid changes no bit. */
#ifndef XPU_ELEMENTWISE_H
#define XPU_ELEMENTWISE_H

#define XPU_EW_F32 0 /* dtype: f32 values */
#define XPU_EW_F16 1 /* dtype: f16 values, computed in f32, rounded once at the store */
#define XPU_EW_DTYPES 2

#define XPU_ROPE_NORMAL 0 /* rope pairs elements 2i and 2i + 1 */
#define XPU_ROPE_NEOX 1   /* rope pairs elements i and i + n_dims / 2 */

/* Threads a group, and at most this many groups: a grid-stride loop does the rest. 4096
 * groups of 256 is about four times what an H100 holds resident at once. */
#define XPU_EW_BLOCK 256
#define XPU_EW_MAX_GROUPS 4096
/* swiglu_q8k: one group per q8_K block of 256 values, each thread four of them. */
#define XPU_EW_Q8K_THREADS 64

#endif
