/* shape_grain.h — the shape kernels' grain, the items one thread covers: a group of 256 threads
 * covers 256 * XPU_SHAPE_GRAIN consecutive items on every backend (kernels/cpu/shape_ops.c,
 * kernels/cuda/shape_ops.cu, kernels/vulkan/shape_ops.glsl), and kernels/launch_shape.c sizes
 * the grid by it. 16 lets a CUDA thread move its items as whole 16-byte vectors whatever the
 * element size (elem vectors of 16 / elem items each). cumsum, whose items are lanes, keeps a
 * grain of one. Included by C, CUDA and GLSL alike, so it holds nothing but this define. */
#ifndef XPU_SHAPE_GRAIN_H
#define XPU_SHAPE_GRAIN_H

#define XPU_SHAPE_GRAIN 16

#endif
