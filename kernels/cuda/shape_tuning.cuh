/* shape_tuning.cuh — the CUDA (and HIP) shape kernels' tuning constants, in one place: how
 * many blocks an SM each kernel must hold (its register cap), how many loads a thread keeps in
 * flight, and the paths kept for A/B work. Each says what it measured; docs/TUNING.md lists
 * them with the PERF section that holds the figures. Every one may be overridden for an A/B
 * build (make NVCCFLAGS="-O3 -DNAME=V", or a module for XPULUA_CUDA_FATBIN); the specs gate
 * the bits of any setting against the CPU. Included by shape_ops.cu only. */
#ifndef XPU_SHAPE_TUNING_CUH
#define XPU_SHAPE_TUNING_CUH

#ifndef SHAPE_BATCH
#define SHAPE_BATCH 4 /* chunks whose loads a thread issues before their stores */
#endif

/* 1: streaming (evict-first) vector loads and stores, as the copy ceiling's own kernel, in
 * every vector kernel but two kinds, which keep what they load in the caches (SHAPE_KEEP):
 * contiguize, whose tiles gain, and the rows kernels (pad_rows, pad_backward_rows, the rows
 * walk). H200, 1 GiB f32, this build against one with SHAPE_STREAMING=0 (every kernel cached)
 * in the same run: contiguize 2934 / 3244 GB/s; triu 3785 / 3532, tril 3851 / 3546, flip
 * 3833 / 3752, the others level (docs/PERF.md, fourth pass). The rows kernels cached against
 * streaming, one call: pad_rows 3894-3907 / 3690-3832 GB/s, pad_backward_rows 3240-3269 /
 * 3065-3072 (a switch for them, SHAPE_ROWS_STREAM, went once it had lost). 0: no kernel
 * streams. */
#ifndef SHAPE_STREAMING
#define SHAPE_STREAMING 1
#endif

#ifndef SHAPE_SUM_AHEAD
#define SHAPE_SUM_AHEAD 8 /* terms of an element-walk sum whose loads are in flight together */
#endif

#ifndef SHAPE_PBW_ROW_TERMS
#define SHAPE_PBW_ROW_TERMS 4 /* upstream rows a chunk of a row on an outer border sums as vectors */
#endif

/* pad_backward_rows' walk and what each batch size measured: the comment above
 * shape_pbw_rows_walk in shape_ops.cu. */
#ifndef SHAPE_PBW_BATCH
#define SHAPE_PBW_BATCH 8 /* chunks a thread has in flight in pad_backward_rows */
#endif

#ifndef SHAPE_PBW_SLIM_BORDER
#define SHAPE_PBW_SLIM_BORDER 1 /* a one-row lane's reflected border chunks in closed form */
#endif

#ifndef SHAPE_PBW_LAST_FIRST
/* 1: the launch's last group in block 0 (shape_pbw_rows_walk). H200, 1 GiB f32 reflect,
 * padding ((1, 1), (16, 16)), two rounds: 3926-3937 GB/s against 3688-3694 in launch order. */
#define SHAPE_PBW_LAST_FIRST 1
#endif

#ifndef SHAPE_PBW_EARLY_BORDER
#define SHAPE_PBW_EARLY_BORDER 1 /* a one-row lane's border chunks at its batch's two ends loaded with the batch */
#endif

/* pad_backward with each gradient row's upstream row found once a group (shape_pbw_rows_walk).
 * SHAPE_PBW_ROWS_BLOCKS: blocks an SM (2: 128 registers, with 8 chunks a batch; 3: 80, where 4
 * chunks a batch ran 3337-3480 GB/s; 4: 64, 3139-3180 at 4 chunks, 2374-2812 at 8, spilling). */
#ifndef SHAPE_PBW_ROWS_BLOCKS
#define SHAPE_PBW_ROWS_BLOCKS 2
#endif

#ifndef SHAPE_SCAN_AHEAD
#define SHAPE_SCAN_AHEAD 8 /* a lane's loads in flight before their sums are stored */
#endif

/* SHAPE_SCAN_AHEAD and cumsum's blocks an SM (the register cap; at 3 it holds 64, so four
 * blocks an SM). H200, 1 GiB f32 [256, 1M] along axis 0, alternated in one call, % of the copy
 * beside it: 8 ahead 92-93 %, 16 ahead 86-87 %, 4 ahead at 4 blocks (40 registers, six blocks
 * an SM) 88-90 % (docs/PERF.md, "Triangles item by item"). */
#ifndef SHAPE_SCAN_BLOCKS
#define SHAPE_SCAN_BLOCKS 3
#endif

/* cumsum_vec4's 16-byte loads in flight a thread. H200, 1 GiB f32 [256, 1M] along axis 0,
 * alternated in one call over two rounds, GB/s: 4 ahead (54 registers) 3886-3903, 4 ahead at
 * four blocks an SM 3800-3899, 8 ahead 3743-3820; the scalar cumsum had run 3700-3780
 * (docs/PERF.md, "The driver's copy path; cumsum_vec4 on CUDA"). */
#ifndef SHAPE_SCAN4_AHEAD
#define SHAPE_SCAN4_AHEAD 4
#endif

#ifndef SHAPE_ITEM_BATCH
#define SHAPE_ITEM_BATCH 8 /* items of a thread whose loads are issued before their stores */
#endif

/* pad_items': H200, 1 GiB f32, rows of 1023, GB/s at 4 / 8 / 16 a batch: 2661-2693 / 2766-2829 /
 * 3083-3085 (72 / 76 / 82-83 % of the copy beside it); pad_backward_items at 16 spills (668
 * bytes) and ran 1789-1806 against 1979-2013 at 8. */
#ifndef SHAPE_PAD_ITEM_BATCH
#define SHAPE_PAD_ITEM_BATCH 16
#endif

#ifndef SHAPE_PBW_ITEM_BATCH
#define SHAPE_PBW_ITEM_BATCH SHAPE_ITEM_BATCH /* pad_backward_items' */
#endif

/* roll: out[o, j] = in[o, (j - shift) mod dim] along the flattened [outer, dim * inner], shift
 * folded into [0, dim) by the launcher: an item walk, its cursor (row, column) in 32 bits where
 * the items allow, each warp load and store a run of 32 elements. As 16-byte chunks (flip's
 * walk), a shift that is not a whole chunk made every chunk two loads and a funnel shift. H200,
 * 1 GiB f32 shifted by 7, alternated in one call (GB/s, % of the copy beside it): this walk
 * 4123-4126 (102 %), the same walk with a 64-bit cursor 3527-3582 (89-90 %), this walk at 8 a
 * batch and four blocks an SM (64 registers) 3875-3899 (97-99 %); docs/PERF.md, "Triangles
 * item by item". */
#ifndef SHAPE_ROLL_BATCH
#define SHAPE_ROLL_BATCH 16
#endif

#ifndef SHAPE_ROLL_BLOCKS
#define SHAPE_ROLL_BLOCKS 3
#endif

#ifndef SHAPE_PAD_ITEMS_BLOCKS
#define SHAPE_PAD_ITEMS_BLOCKS 4 /* blocks an SM pad_items must hold */
#endif

#ifndef SHAPE_PBW_ITEMS_BLOCKS
#define SHAPE_PBW_ITEMS_BLOCKS 3 /* blocks an SM pad_backward_items must hold */
#endif

/* write_slice_rotating_rows' blocks an SM: at 3, 76 registers; at 4 it spills 84 bytes and ran
 * 82 % of the copy beside it against 96-97 % (H200, 1 GiB f32; docs/PERF.md). */
#ifndef SHAPE_RING_BLOCKS
#define SHAPE_RING_BLOCKS 3
#endif

/* 1: full tiles on 16-byte boundaries move 16-byte vectors on both sides of a transpose; 0:
 * every tile goes element by element. */
#ifndef SHAPE_TILE_VEC
#define SHAPE_TILE_VEC 1
#endif

/* 1: a block's full vector tiles come into shared memory by cp.async (sm_80 on), the next
 * tile's copies in flight while the current one is written out, two tiles of shared memory a
 * block; 0: through registers, one tile at a time (shape_tile_vec). HIP has no cp.async. */
#ifndef SHAPE_TILE_ASYNC
#ifdef XPU_HIP
#define SHAPE_TILE_ASYNC 0
#else
#define SHAPE_TILE_ASYNC 1
#endif
#endif

/* Vectors of a tile a thread copies in (shape_tile_fetch) or writes out (shape_tile_drain) in
 * one unrolled step: 4 (all of an f32 tile's) needs two blocks an SM (at three, 404 bytes
 * spilled; 1 spills 24). H200, 1 GiB f32 transposed, two rounds: 4 at two blocks 3880-3903
 * GB/s, 1 at three 3846-3851, registers one tile at a time (SHAPE_TILE_ASYNC 0) 3763. */
#ifndef SHAPE_TILE_UNROLL
#define SHAPE_TILE_UNROLL 4
#endif

/* Blocks an SM the plain contiguize (the walks) must hold: 3 -> 70 registers, no spill; 4 -> 64,
 * 16 bytes spilled. H200, 1 GiB f32, a view of runs of 512 / 64 / 8 items at stride 1
 * (`bench-shape-ops.lua --run N`), GB/s: 3 blocks 3094-3127 / 3120 / 2775-2819, 4 blocks
 * 3337-3372 / 3399 / 2811-2812; with the tiles in the kernel (80 registers, 192 bytes spilled)
 * 2243-2288 / 2292 / 1903-1919 (docs/PERF.md, "Row tables"). */
#ifndef SHAPE_CONTIG_BLOCKS
#define SHAPE_CONTIG_BLOCKS 4
#endif

/* Blocks an SM contiguize_tiles must hold. With a tile's copies in flight beside the one
 * written out (SHAPE_TILE_ASYNC), 2 (128 registers, 33 KB of shared memory a block; see
 * SHAPE_TILE_UNROLL). One tile at a time, 3: 80 registers and 16 bytes spilled; H200, 1 GiB
 * f32 transposed, % of the copy beside it: 3 93 %, 2 (120 registers) 81 %, 4 (192 bytes
 * spilled) 81-83 % (docs/PERF.md, "Triangles item by item"). */
#ifndef SHAPE_TILES_BLOCKS
#define SHAPE_TILES_BLOCKS (SHAPE_TILE_ASYNC ? 2 : 3)
#endif

/* contiguize_tiles for transposes whose steps (the last axis's stride, axis p's output stride)
 * are off 16 bytes, so that no tile takes the vector form: every tile through
 * shape_tile_ahead, inlined. H200, 1 GiB f32, a transpose of rows of 1023: 72-73 % of the copy
 * beside it (contiguize_tiles 33 %; at two blocks an SM, 128 registers, 69 %). A kernel of its
 * own: in contiguize_tiles, shape_tile_ahead's registers cost the vector tiles (200-550 bytes
 * spilled, 16 % slower at rows of 1024). */
#ifndef SHAPE_TILES_ODD_BLOCKS
#define SHAPE_TILES_ODD_BLOCKS 3 /* blocks an SM contiguize_tiles_odd must hold */
#endif

#endif
