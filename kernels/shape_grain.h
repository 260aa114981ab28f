/* shape_grain.h — the shape kernels' grain, the items one thread covers: a group of 256 threads
 * covers 256 * XPU_SHAPE_GRAIN consecutive items on every backend (kernels/cpu/shape_ops.c,
 * kernels/cuda/shape_ops.cu, kernels/vulkan/shape_ops.glsl), and kernels/launch_shape.c sizes
 * the grid by it. 16 lets a CUDA thread move its items as whole 16-byte vectors whatever the
 * element size (elem vectors of 16 / elem items each). cumsum, whose items are lanes, keeps a
 * grain of one. Included by C, CUDA and GLSL alike, so it holds nothing but defines. */
#ifndef XPU_SHAPE_GRAIN_H
#define XPU_SHAPE_GRAIN_H

#define XPU_SHAPE_GRAIN 16

/* The rows kernels (pad_rows, pad_backward_rows: a group finds each output row's source once)
 * cover XPU_SHAPE_ROW_GROUPS times a group's usual items. kernels/launch_shape.c takes them
 * where the output rows hold at least XPU_SHAPE_ROW_MIN items (in whole 16-byte chunks), so a
 * group's 4 * 256 * 16 items span at most 16383 / 128 + 2 = 129 rows of the table's
 * XPU_SHAPE_ROWS. */
#define XPU_SHAPE_ROW_GROUPS 4
#define XPU_SHAPE_ROW_MIN 128
#define XPU_SHAPE_ROWS 130

/* contiguize_tiles (a transpose's contiguize whose groups each take XPU_SHAPE_TILE_GROUPS of
 * its tiles of 4096 items, so a group's setup serves that many) has groups that many times
 * larger. H200, 1 GiB f32 transposed, GB/s at 1 / 2 / 4 / 8 / 16 tiles a group: 3236-3317 /
 * 3580-3589 / 3654-3670 / 3731-3755 / 3680-3738 (the plain contiguize 3187-3237, copy 3788). */
#define XPU_SHAPE_TILE_GROUPS 8

#endif
