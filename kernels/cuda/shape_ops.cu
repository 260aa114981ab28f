/* shape_ops.cu — CUDA bodies of the shape kernels (src/ops/shape/table.c), the same names,
 * arguments and results as kernels/cpu/shape_ops.c. A block of 256 threads covers 256 *
 * XPU_SHAPE_GRAIN = 4096 items (output elements; write_slice*: source elements), except
 * cumsum: 256 lanes, one a thread.
 *
 * The byte movers cut a block's items into chunks of 16 bytes (16 / elem items): thread t takes
 * chunks t, t + 256, ... (elem of them), so a warp's chunks are adjacent. A chunk whose items
 * come from one contiguous run of the source moves as one 16-byte vector; where the source is
 * not 16-aligned, the 16 bytes are cut from two aligned vectors, the second one taken from the
 * next lane (which loaded it as its own first) by a shuffle. A chunk of a constant border or a
 * dropped triangle is a 16-byte fill. Every other chunk (a run's edge, a misaligned output, a
 * reflected border of pad) takes the element walk, which decodes each item on its own, after
 * the thread's vector chunks. A
 * thread issues the loads of up to four chunks (64 bytes) before their stores, so they are in
 * flight at once; a thread's chunks are a fixed step apart, so their rows are found from the
 * first by adding, not dividing. write_slice* loads its (dense) source before working out
 * where it goes; contiguize of a transposed view goes through shared-memory tiles (by
 * cp.async, the next tile coming in while one is written out). pad and
 * pad_backward over rows of 128 items or more have kernels of their own (pad_rows,
 * pad_backward_rows: shape_rows_walk, shape_pbw_rows_walk), whose groups are four times larger
 * and find each output row's source once; rows that are not whole chunks go item by item
 * (pad_items ... tril_items, contiguize_tiles_odd: "item walks" below).
 *
 * Tuning knobs: SHAPE_MIN_BLOCKS below, the rest in shape_tuning.cuh (each with what it
 * measured; docs/TUNING.md lists them).
 *
 * The typed kernels add in the CPU bodies' order, so both backends give the same bytes on
 * finite values. Uses xpu_cuda.cuh and kernels/shape_grain.h. */
#include "xpu_cuda.cuh"
#include "../shape_grain.h"

#define SHAPE_BLOCK 256
#include "shape_tuning.cuh" /* the knobs: blocks an SM, loads in flight, paths */
/* Blocks an SM must hold, per kernel: the register cap (3 -> 80, 4 -> 64, 5 -> 48 a thread).
 * A thread moves 64 bytes and is done, so what is in flight on an SM is its resident blocks
 * times 16 KiB, against the registers the index work wants. Measured on the H200 at 1 GiB f32
 * (GB/s at 3 / 4 / 5): pad 2760 / 3152 / 2992, pad_backward 1342 / 1586 / 1687, flip 3683 /
 * 3548 / 2963, roll 2789 / 3016 / 1729, cumsum 3773 / 3772 / 3454, triu 3565 / 3778 / 3788,
 * tril 3609 / 3837 / 3820, write_slice 3273 / 3430 / 3390, write_slice_rotating 3132 / 3206 /
 * 3253, contiguize 2905 / 2406 / 2084 (roll's figures are its vector walk's: its item walk
 * holds 16 values and takes 3, spilling at 4); write_slice_rotating_rows takes 3 (76
 * registers; its first body spilled at 4); pad_backward_rows 3 (3043-3070 GB/s against
 * 2966-2976 at 4 and 1958-1975 at 5, where it spills).
 * SHAPE_MIN_BLOCKS=N sets every kernel's. */
#ifdef SHAPE_MIN_BLOCKS
#define SHAPE_BOUNDS(blocks) __launch_bounds__(SHAPE_BLOCK, SHAPE_MIN_BLOCKS)
#else
#define SHAPE_BOUNDS(blocks) __launch_bounds__(SHAPE_BLOCK, blocks)
#endif
#define SHAPE_KEEP false /* a kernel's loads and stores stay in the caches */


static_assert(XPU_SHAPE_GRAIN == 16, "a thread's 16 items are elem chunks of 16 bytes each");
static_assert(XPU_SHAPE_ROW_GROUPS * 8 <= 32 && XPU_SHAPE_PAD_ROW_GROUPS * 8 <= 32,
	      "a rows walk's thread marks its slow chunks in 32 bits");

/* The sections, in the order each builds on the ones before it. */
#include "shape_common.cuh"
#include "shape_pad.cuh"
#include "shape_pad_rows.cuh"
#include "shape_scan.cuh"
#include "shape_items.cuh"
#include "shape_slab.cuh"
#include "shape_contiguize.cuh"
