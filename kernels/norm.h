/* norm.h — the constants of the row-normalisation kernels (rms_norm, layer_norm, softmax,
 * add_rms_norm, rms_norm_q8k: src/ops/layer/norm.c), shared by kernels/cpu/norm.c,
 * kernels/cuda/norm.cu and kernels/vulkan/norm.glsl. Included by C, CUDA and GLSL alike, so it
 * holds nothing but defines.
 *
 * One workgroup of XPU_NORM_BLOCK lanes normalises one row. The block is part of the
 * arithmetic: lane t accumulates elements t, t + BLOCK, t + 2 BLOCK, ... of the row in that
 * order, then the lanes' values meet in kernels/workgroup.h's reduce, so every backend runs
 * this one block (the kernel table pins it). docs/ARITHMETIC.md, "Row normalisation", gives
 * each kernel's operations in order. */
#ifndef XPU_NORM_H
#define XPU_NORM_H

#define XPU_NORM_BLOCK 256          /* lanes a row: 8 waves of 32 */
#define XPU_NORM_MAX_COLS 16777216  /* 2^24: every count up to it is exact as an f32 */
#define XPU_NORM_GRID_X 32768       /* groups along x; more rows go on to y */

#endif
