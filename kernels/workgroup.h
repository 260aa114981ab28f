/* workgroup.h — the codes of the workgroup primitives' test kernels (workgroup_reduce,
 * workgroup_scan: src/ops/workgroup/table.c) and the order every backend's helpers keep
 * (kernels/cpu/workgroup.c, kernels/cuda/workgroup.cuh, kernels/vulkan/workgroup.glsl).
 * Included by C, CUDA and GLSL alike, so it holds nothing but defines.
 *
 * The order. A workgroup is whole waves of XPU_WG_WAVE lanes (a virtual wave where the
 * hardware's is another width). Reduce: each wave combines its lanes in the butterfly
 * off = 16, 8, 4, 2, 1, where lanes l and l ^ off both compute op(lower lane's value, upper
 * lane's value), so the two agree and after five steps every lane of the wave holds the same
 * value; lane 0 of each wave stores it; one barrier; every lane combines the partials from
 * wave 0 upward (r = p0, then r = op(r, p1), ...); a second barrier, so a reduce in a loop
 * cannot overwrite a partial another wave has not read. An f32 sum is therefore one defined
 * value. Scan (exclusive, integers): each wave takes the inclusive scan of its lanes
 * (Hillis-Steele, off = 1 .. 16: lane l >= off combines lane l - off's value before its own),
 * the exclusive value is lane l - 1's (the identity in lane 0), the wave's last lane stores
 * the wave's total, one barrier, each lane combines the totals of the waves before its own
 * from wave 0 upward, then its own exclusive value; a second barrier.
 *
 * f32 max / min are selects, never arithmetic: a NaN operand is returned as it is (the first
 * one, in the order above), otherwise max(a, b) = b > a ? b : a and min(a, b) = b < a ? b : a
 * (so max(-0, +0) is -0: the order decides, and it is fixed). Integer adds wrap (two's
 * complement); the identities are 0, the type's minimum (max) and maximum (min). */
#ifndef XPU_WORKGROUP_H
#define XPU_WORKGROUP_H

#define XPU_WG_WAVE 32     /* lanes in a (virtual) wave */
#define XPU_WG_MAX_WAVES 32 /* waves in a workgroup: blocks of 32 .. 1024 threads */

#define XPU_WG_ADD 0
#define XPU_WG_MAX 1
#define XPU_WG_MIN 2
#define XPU_WG_OPS 3

#define XPU_WG_F32 0
#define XPU_WG_I32 1
#define XPU_WG_I64 2
#define XPU_WG_DTYPES 3

#endif
