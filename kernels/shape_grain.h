/* shape_grain.h — the shape kernels' grain, the items one thread covers: a group of 256 threads
 * covers 256 * XPU_SHAPE_GRAIN consecutive items on every backend (kernels/cpu/shape_ops.c,
 * kernels/cuda/shape_ops.cu, kernels/vulkan/shape_ops.glsl), and src/ops/shape/launch.c sizes
 * the grid by it. 16 lets a CUDA thread move its items as whole 16-byte vectors whatever the
 * element size (elem vectors of 16 / elem items each). cumsum, whose items are lanes, keeps a
 * grain of one. Included by C, CUDA and GLSL alike, so it holds nothing but defines. */
#ifndef XPU_SHAPE_GRAIN_H
#define XPU_SHAPE_GRAIN_H

#define XPU_SHAPE_GRAIN 16

/* The rows kernels (pad_rows, pad_backward_rows: a group finds each output row's source once)
 * cover XPU_SHAPE_ROW_GROUPS times a group's usual items. src/ops/shape/launch.c takes them
 * where the output rows hold at least XPU_SHAPE_ROW_MIN items (in whole 16-byte chunks), so a
 * group's 4 * 256 * 16 items span at most 16383 / 128 + 2 = 129 rows of the table's
 * XPU_SHAPE_ROWS. */
#define XPU_SHAPE_ROW_GROUPS 4
/* pad_rows covers half as many (H200, 1 GiB f32, alternated in one call, % of the copy beside
 * it: CUDA 102 % at 2 against 100-101 % at 4 and 93-94 % at 1; Vulkan 93-94 % against 88-91 %
 * and 94-97 %), where pad_backward_rows' walk wants all four (2: CUDA 86-87 % against 89-91 %,
 * Vulkan 79-83 % against 88 %; docs/PERF.md, "Copy ceilings"). */
#define XPU_SHAPE_PAD_ROW_GROUPS 2
#define XPU_SHAPE_ROW_MIN 128
#define XPU_SHAPE_ROWS 130

/* contiguize_tiles (a transpose's contiguize whose groups each take XPU_SHAPE_TILE_GROUPS of
 * its tiles of 4096 items, so a group's setup serves that many) has groups that many times
 * larger. H200, 1 GiB f32 transposed, GB/s at 1 / 2 / 4 / 8 / 16 tiles a group: 3236-3317 /
 * 3580-3589 / 3654-3670 / 3731-3755 / 3680-3738 (the plain contiguize 3187-3237, copy 3788). */
#define XPU_SHAPE_TILE_GROUPS 8

#endif
