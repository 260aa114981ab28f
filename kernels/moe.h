/* moe.h — the constants of the two kernels a mixture-of-experts step adds to the layer set
 * (matvec_f32, the router's f32 mat-vec, and moe_combine, the weighted sum of the experts'
 * rows into the residual: src/ops/layer/moe.c), shared by kernels/cpu/moe.c,
 * kernels/cuda/moe.cu and kernels/vulkan/{matvec_f32,moe_combine}.comp. Included by C, CUDA
 * and GLSL alike, so it holds nothing but defines.
 *
 * matvec_f32: one 32-lane wave a (token, row) pair; lane l adds the products of columns
 * l, l + 32, l + 64, ... in that order, then the wave's butterfly (kernels/workgroup.h) adds
 * the lanes. The wave is the arithmetic; how many waves share a group is not (it changes no
 * bit), so the group of XPU_MV32_BLOCK lanes is a launch choice. moe_combine: one function per
 * element. docs/ARITHMETIC.md, "Mixture-of-experts kernels", gives the order. */
#ifndef XPU_MOE_H
#define XPU_MOE_H

#define XPU_MV32_BLOCK 128    /* matvec_f32: 4 waves a group, one (token, row) pair a wave */
#define XPU_MV32_WAVES 4
#define XPU_MOE_BLOCK 256     /* moe_combine: one element a lane */
#define XPU_MOE_MAX_USED 8    /* moe_combine: experts a token (top_k's k) */
#define XPU_MOE_GRID_X 32768  /* groups along x; more go on to y */

#endif
