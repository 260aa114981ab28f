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

/* ---- indices ------------------------------------------------------------------------------- */

/* cumsum's lane: one a thread. */
static __device__ __forceinline__ uint64_t shape_item(void)
{
	return xpu_group() * SHAPE_BLOCK + xpu_thread();
}

/* x / d and x % d: 64-bit division is emulated at length on the GPU, so the common case of
 * indices below 2^32 takes the 32-bit path. */
static __device__ __forceinline__ uint64_t shape_div(uint64_t x, uint64_t d, uint64_t *rem)
{
	if (((x | d) >> 32) == 0) {
		uint32_t q = (uint32_t)x / (uint32_t)d;
		*rem = (uint32_t)x - q * (uint32_t)d;
		return q;
	}
	uint64_t q = x / d;
	*rem = x - q * d;
	return q;
}

/* One digit of a row-major decode, axes taken last to first (k a constant in unrolled loops):
 * the outermost axis's digit is all that is left, no division. */
static __device__ __forceinline__ uint64_t shape_digit(uint64_t rem, uint64_t d, int k, uint64_t *x)
{
	if (k == 0) {
		*x = rem;
		return 0;
	}
	return shape_div(rem, d, x);
}

/* The next chunk of the thread: (row, j) of a row-major [*, len] index advanced by the step
 * q * len + r (r < len). */
static __device__ __forceinline__ void shape_step(uint64_t *row, uint64_t *j, uint64_t q, uint64_t r, uint64_t len)
{
	*j += r;
	*row += q;
	if (*j >= len) {
		*j -= len;
		*row += 1;
	}
}

/* Value k of eight u32 values packed two to a u64 argument. */
static __device__ __forceinline__ uint32_t shape_u32(const unsigned long long *w, int k)
{
	return (uint32_t)(w[k / 2] >> (32 * (k & 1)));
}

/* One element, moved whole: the extents made every base a multiple of the element. */
static __device__ __forceinline__ void shape_move(uint8_t *dst, const uint8_t *src, uint32_t elem)
{
	switch (elem) {
	case 1: *dst = *src; break;
	case 2: *(uint16_t *)dst = *(const uint16_t *)src; break;
	case 4: *(uint32_t *)dst = *(const uint32_t *)src; break;
	default: *(uint64_t *)dst = *(const uint64_t *)src; break;
	}
}

static __device__ __forceinline__ void shape_store_bits(uint8_t *dst, uint64_t bits, uint32_t elem)
{
	switch (elem) {
	case 1: *dst = (uint8_t)bits; break;
	case 2: *(uint16_t *)dst = (uint16_t)bits; break;
	case 4: *(uint32_t *)dst = (uint32_t)bits; break;
	default: *(uint64_t *)dst = bits; break;
	}
}

static __device__ __forceinline__ uint64_t shape_load_bits(const uint8_t *src, uint32_t elem)
{
	switch (elem) {
	case 1: return *src;
	case 2: return *(const uint16_t *)src;
	case 4: return *(const uint32_t *)src;
	default: return *(const uint64_t *)src;
	}
}

/* p, which the compiler may no longer work out again from the kernel's arguments: it keeps
 * the value (in a register, or spilled: one load) instead of redoing a product over eight
 * axes at each use (pad_backward_rows did at every chunk: 114 of its 250 instructions a chunk;
 * pad's input end, kept the same way, cost pad 3-4 %, so it is left to the compiler). */
static __device__ __forceinline__ const uint8_t *shape_kept(const uint8_t *p)
{
#ifndef XPU_HIP /* hipcc has no 64-bit register constraint */
	asm("" : "+l"(p));
#endif
	return p;
}

/* ---- 16-byte vectors ------------------------------------------------------------------------- */

static __device__ __forceinline__ bool shape_al16(const void *p)
{
	return ((uintptr_t)p & 15) == 0;
}

static __device__ __forceinline__ const uint8_t *shape_floor16(const uint8_t *p)
{
	return (const uint8_t *)((uintptr_t)p & ~(uintptr_t)15);
}

template <bool STREAM = true>
static __device__ __forceinline__ uint4 shape_ld16(const uint8_t *p)
{
	if (STREAM && SHAPE_STREAMING)
		return __ldcs((const uint4 *)p);
	return *(const uint4 *)p;
}

template <bool STREAM = true>
static __device__ __forceinline__ void shape_st16(uint8_t *p, uint4 v)
{
	if (STREAM && SHAPE_STREAMING)
		__stcs((uint4 *)p, v);
	else
		*(uint4 *)p = v;
}

/* The 16 bytes at offset s (0 .. 15) of the 32 bytes x:y. */
static __device__ __forceinline__ uint4 shape_shift16(uint4 x, uint4 y, uint32_t s)
{
	const uint32_t q = s >> 2, b = (s & 3) * 8;
	/* words q .. q + 4 of x:y, picked without an indexed (local) array */
	const uint32_t w0 = q == 0 ? x.x : q == 1 ? x.y : q == 2 ? x.z : x.w;
	const uint32_t w1 = q == 0 ? x.y : q == 1 ? x.z : q == 2 ? x.w : y.x;
	const uint32_t w2 = q == 0 ? x.z : q == 1 ? x.w : q == 2 ? y.x : y.y;
	const uint32_t w3 = q == 0 ? x.w : q == 1 ? y.x : q == 2 ? y.y : y.z;
	const uint32_t w4 = q == 0 ? y.x : q == 1 ? y.y : q == 2 ? y.z : y.w;
	return make_uint4(__funnelshift_r(w0, w1, b), __funnelshift_r(w1, w2, b), __funnelshift_r(w2, w3, b),
			  __funnelshift_r(w3, w4, b));
}

/* Whether the two aligned vectors that hold the 16 bytes at p lie inside [lo, hi). */
static __device__ __forceinline__ bool shape_window(const uint8_t *p, const uint8_t *lo, const uint8_t *hi)
{
	const uint8_t *a = shape_floor16(p);
	return a >= lo && a + 32 <= hi;
}

/* The elements of v in reverse order (a flip along the innermost axis). */
static __device__ __forceinline__ uint4 shape_rev16(uint4 v, uint32_t elem)
{
	if (elem == 8)
		return make_uint4(v.z, v.w, v.x, v.y);
	const uint32_t sel = elem == 4 ? 0x3210 : elem == 2 ? 0x1032 : 0x0123; /* within a word */
	return make_uint4(__byte_perm(v.w, 0, sel), __byte_perm(v.z, 0, sel), __byte_perm(v.y, 0, sel),
			  __byte_perm(v.x, 0, sel));
}

/* 16 bytes of one repeated element (its low elem bytes of bits). */
static __device__ __forceinline__ uint4 shape_splat16(uint64_t bits, uint32_t elem)
{
	uint32_t lo = (uint32_t)bits, hi = (uint32_t)(bits >> 32);
	if (elem == 1)
		lo = (lo & 0xffu) * 0x01010101u;
	else if (elem == 2)
		lo = (lo & 0xffffu) * 0x00010001u;
	if (elem != 8)
		hi = lo;
	return make_uint4(lo, hi, lo, hi);
}

/* Element t of v (its bits in the low elem bytes); t and elem need not be constants. */
static __device__ __forceinline__ uint64_t shape_lane(uint4 v, uint32_t t, uint32_t elem)
{
	const uint32_t byte = t * elem, w = byte >> 2;
	const uint32_t lo = w == 0 ? v.x : w == 1 ? v.y : w == 2 ? v.z : v.w;
	const uint32_t hi = w == 0 ? v.y : w == 1 ? v.z : w == 2 ? v.w : 0;
	return (((uint64_t)hi << 32) | lo) >> ((byte & 3) * 8);
}

/* v with element t (t a constant, elem 2, 4 or 8) replaced by the low elem bytes of bits. */
static __device__ __forceinline__ void shape_lane_set(uint4 *v, uint32_t t, uint32_t elem, uint64_t bits)
{
	uint32_t *w = t * elem / 4 == 0 ? &v->x : t * elem / 4 == 1 ? &v->y : t * elem / 4 == 2 ? &v->z : &v->w;
	if (elem == 8) {
		w[0] = (uint32_t)bits;
		w[1] = (uint32_t)(bits >> 32);
	} else if (elem == 4) {
		*w = (uint32_t)bits;
	} else {
		const uint32_t s = (t & 1) * 16;
		*w = (*w & ~(0xffffu << s)) | (((uint32_t)bits & 0xffffu) << s);
	}
}

/* ---- warp exchange ------------------------------------------------------------------------- */

static __device__ __forceinline__ uint32_t shape_lane_id(void)
{
	return xpu_thread() & 31;
}

/* Whether lane `from` (the next lane along a run, the previous one along a flip's reversed
 * run) loads the aligned vector right after a (this lane's aligned source vector, 0 where it
 * loads none). Every lane of the warp calls it. */
static __device__ __forceinline__ bool shape_neighbour_loads(const uint8_t *a, int from)
{
	const unsigned long long nb = __shfl_sync(XPU_FULL_MASK, (unsigned long long)(uintptr_t)a, from & 31);
	return a && from >= 0 && from < 32 && nb == (unsigned long long)(uintptr_t)(a + 16);
}

/* Whether p holds on any lane of the warp (on HIP of the whole wave, uniform there too). */
static __device__ __forceinline__ bool shape_any(bool p)
{
#ifdef XPU_HIP
	return __any(p);
#else
	return __any_sync(XPU_FULL_MASK, p);
#endif
}

/* v of lane `from`. Every lane of the warp calls it. */
static __device__ __forceinline__ uint4 shape_shfl16(uint4 v, int from)
{
	return make_uint4(__shfl_sync(XPU_FULL_MASK, v.x, from & 31), __shfl_sync(XPU_FULL_MASK, v.y, from & 31),
			  __shfl_sync(XPU_FULL_MASK, v.z, from & 31), __shfl_sync(XPU_FULL_MASK, v.w, from & 31));
}

/* ---- the chunk walk ------------------------------------------------------------------------- */

/* How a chunk moves (bits 0-2): nothing (past the end), element by element, one aligned
 * vector, two vectors shifted, or the op's fill. SC_REV reverses the loaded elements, SC_LEFT
 * puts pad_backward's mirror terms first in their sums; bits 8-11 hold where an SC_ANY source
 * starts in its aligned vector, bits 16-23 pad_backward's two-term elements. One word a chunk
 * is all that stays live from its plan to its store besides the data. */
enum { SC_NONE, SC_SLOW, SC_COPY, SC_ANY, SC_FILL, SC_KIND = 7, SC_REV = 8, SC_LEFT = 16 };
#define SC_OFFSET(kind) (((kind) >> 8) & 15)
#define SC_MASK(kind) ((uint32_t)(kind) >> 16)

/* A plan's answer: the kind, the source (SC_COPY, SC_ANY), and where element 0's second term
 * is (pad_backward's mirrors). */
struct shape_chunk {
	const uint8_t *src, *aux;
	int kind;
};

/* How an aligned-destination chunk reads the 16 source bytes at p, the source being [lo, hi). */
static __device__ __forceinline__ int shape_src_kind(const uint8_t *p, const uint8_t *lo, const uint8_t *hi)
{
	return shape_al16(p) ? SC_COPY : shape_window(p, lo, hi) ? SC_ANY : SC_SLOW;
}

/* The lane whose first vector a chunk's second one may be: the next along a run, the
 * previous along a reversed one (a flip's chunks walk their source backwards). */
static __device__ __forceinline__ int shape_from(int kind)
{
	return (int)shape_lane_id() + (kind & SC_REV ? -1 : 1);
}

/* What the chunk walk asks of an op besides plan and slow: nothing more is loaded, the vector
 * is stored as it came (pad_backward overrides both, for SC_COPY chunks: the side values take
 * the place of an SC_ANY chunk's second vector). */
struct shape_plain {
	__device__ void side_load(int, const uint8_t *, uint4 *) const {}
	__device__ uint4 finish(int, uint4 v, const uint4 &) const { return v; }
};

/* Runs an op over the thread's chunks. The op gives n (items), elem, len (its row length),
 * out (the dense output: item i at out + i * elem), fill (16 bytes) and slow(i0, count), the
 * element walk; plan(i0, row, j, per, &chunk) plans the chunk of items [i0, i0 + per) at
 * (row, j) = (i0 / len, i0 % len). Each chunk's loads are issued as soon as it is planned,
 * the stores after the last load; slow chunks go last. Votes and shuffles are reached by
 * every lane: the loops are uniform. */
template <bool STREAM = true, class Op, class Plan>
static __device__ __forceinline__ void shape_walk(const Op &op, const Plan &plan)
{
	const uint32_t elem = op.elem, per = 16 / elem;
	const uint64_t first = xpu_group() * elem * SHAPE_BLOCK + xpu_thread();
#if SHAPE_CURSOR
	uint64_t j, r_step, row = shape_div(first * per, op.len, &j);
	const uint64_t q_step = shape_div((uint64_t)SHAPE_BLOCK * per, op.len, &r_step);
#endif
	uint32_t slow = 0; /* bit u: the thread's chunk u takes the element walk, after all the rest */
#pragma unroll 1 /* one batch's registers at a time */
	for (uint32_t u0 = 0; u0 < elem; u0 += SHAPE_BATCH) {
		int kind[SHAPE_BATCH];
		uint4 x[SHAPE_BATCH], y[SHAPE_BATCH]; /* y: SC_ANY's second vector, else the op's side values */
		uint32_t own = 0, shared = 0;
#pragma unroll
		for (int b = 0; b < SHAPE_BATCH; b++) {
			const uint64_t i0 = (first + (uint64_t)(u0 + b) * SHAPE_BLOCK) * per;
			shape_chunk c;
			c.kind = SC_NONE;
#if SHAPE_CURSOR
			if (u0 + b < elem && i0 < op.n)
				plan(i0, row, j, per, &c);
			shape_step(&row, &j, q_step, r_step, op.len);
#else
			if (u0 + b < elem && i0 < op.n) {
				uint64_t jj;
				const uint64_t rr = shape_div(i0, op.len, &jj);
				plan(i0, rr, jj, per, &c);
			}
#endif
			const int k = c.kind & SC_KIND;
			const uint8_t *a = k == SC_COPY || k == SC_ANY ? shape_floor16(c.src) : nullptr;
			bool mine = k == SC_ANY;
#if SHAPE_ANY_SHFL
			if (shape_any(mine)) {
				shared |= 1u << b;
				const bool next = shape_neighbour_loads(a, shape_from(c.kind)); /* every lane */
				mine = mine && !next;
			}
#endif
			slow |= (uint32_t)(k == SC_SLOW) << (u0 + b);
			own |= mine << b;
			x[b] = a ? shape_ld16<STREAM>(a) : op.fill;
			if (mine)
				y[b] = shape_ld16<STREAM>(a + 16);
			op.side_load(c.kind, c.aux, &y[b]);
			kind[b] = c.kind | (k == SC_ANY ? (int)((uintptr_t)c.src & 15) << 8 : 0);
		}
#pragma unroll
		for (int b = 0; b < SHAPE_BATCH; b++) {
			const uint64_t i0 = (first + (uint64_t)(u0 + b) * SHAPE_BLOCK) * per;
			const int k = kind[b] & SC_KIND;
			if (shared >> b & 1) { /* uniform: the same for the whole warp */
				const uint4 nb = shape_shfl16(x[b], shape_from(kind[b]));
				if (k == SC_ANY && !(own >> b & 1)) /* y holds an op's side values elsewhere */
					y[b] = nb;
			}
			if (k >= SC_COPY) {
				uint4 v = k == SC_ANY ? shape_shift16(x[b], y[b], SC_OFFSET(kind[b])) : x[b];
				v = op.finish(kind[b], v, y[b]);
				shape_st16<STREAM>(op.out + i0 * elem, kind[b] & SC_REV ? shape_rev16(v, elem) : v);
			}
		}
	}
	for (; slow; slow &= slow - 1) { /* no batch state is live here: the walk has the registers */
		const uint64_t i0 = (first + (uint64_t)(__ffs(slow) - 1) * SHAPE_BLOCK) * per;
		op.slow(i0, (uint32_t)(op.n - i0 < per ? op.n - i0 : per));
	}
}

/* The walk with the op's own plan. */
template <bool STREAM = true, class Op>
static __device__ __forceinline__ void shape_chunks(const Op &op)
{
	shape_walk<STREAM>(op, [&](uint64_t i0, uint64_t row, uint64_t j, uint32_t per, shape_chunk *c) {
		op.plan(i0, row, j, per, c);
	});
}

/* The walk of the rows kernels (pad_rows, pad_backward_rows): an op whose chunk plan needs one
 * value per output row (where the row's source starts). A group covers XPU_SHAPE_PAD_ROW_GROUPS
 * times the usual 4096 items, so a thread's setup serves that many times more chunks; the
 * group works each row's value out once, one row a thread, into a table that each chunk
 * reads; a chunk's place is a row of the table and a column, stepped in 32 bits. Per chunk
 * this leaves a table read, the op's plan_row(entry, j, per, &chunk) and the moves (pad: 140
 * instructions a chunk and 250 of setup a thread were the generic walk's; docs/PERF.md).
 * src/ops/shape/launch.c takes these kernels where the rows hold at least XPU_SHAPE_ROW_MIN
 * items (below 2^31), so a group spans at most XPU_SHAPE_ROWS rows; a chunk past the table,
 * or one across two rows, takes the element walk, so any geometry is still right. */
template <class Op>
static __device__ __forceinline__ void shape_rows_walk(const Op &op)
{
	__shared__ int64_t entry[XPU_SHAPE_ROWS];
	const uint32_t elem = op.elem, per = 16 / elem, len = (uint32_t)op.len, t = xpu_thread();
	const uint32_t chunks = XPU_SHAPE_PAD_ROW_GROUPS * elem; /* a thread's */
	const uint64_t g0 = (uint64_t)xpu_group() * (SHAPE_BLOCK * XPU_SHAPE_GRAIN * XPU_SHAPE_PAD_ROW_GROUPS);
	const uint64_t row0 = g0 / len;
	for (uint32_t r = t; r < XPU_SHAPE_ROWS; r += SHAPE_BLOCK)
		entry[r] = op.row_entry(row0 + r);
	__syncthreads();
	/* from chunk u to u + 1: 256 chunks on */
	const uint32_t qa = SHAPE_BLOCK * per / len, ra = SHAPE_BLOCK * per - qa * len;
	uint32_t j = (uint32_t)(g0 - row0 * len) + t * per, rel = j / len;
	j -= rel * len;
	const bool whole = op.out_al && len % per == 0; /* no chunk lies across two rows */
	const uint4 fill = op.fill;
	uint32_t slow = 0; /* bit u: the thread's chunk u takes the element walk, after the rest */
#pragma unroll 1
	for (uint32_t u0 = 0; u0 < chunks; u0 += SHAPE_BATCH) {
		int kind[SHAPE_BATCH];
		uint4 x[SHAPE_BATCH], y[SHAPE_BATCH];
#pragma unroll
		for (int b = 0; b < SHAPE_BATCH; b++) {
			const uint64_t i0 = g0 + (uint64_t)((u0 + b) * SHAPE_BLOCK + t) * per;
			shape_chunk c;
			c.kind = SC_NONE;
			if (u0 + b < chunks && i0 < op.n) {
				c.kind = SC_SLOW;
				if (whole && rel < XPU_SHAPE_ROWS)
					op.plan_row(entry[rel], j, per, &c);
			}
			j += ra;
			rel += qa;
			if (j >= len) {
				j -= len;
				rel++;
			}
			const int k = c.kind & SC_KIND;
			const uint8_t *a = k == SC_COPY || k == SC_ANY ? shape_floor16(c.src) : nullptr;
			slow |= (uint32_t)(k == SC_SLOW) << (u0 + b);
			x[b] = a ? shape_ld16<(SHAPE_ROWS_STREAM != 0)>(a) : fill;
			y[b] = k == SC_ANY ? shape_ld16<(SHAPE_ROWS_STREAM != 0)>(a + 16) : make_uint4(0, 0, 0, 0);
			op.side_load(c.kind, c.aux, &y[b]);
			kind[b] = c.kind | (k == SC_ANY ? (int)((uintptr_t)c.src & 15) << 8 : 0);
		}
#pragma unroll
		for (int b = 0; b < SHAPE_BATCH; b++) {
			const uint64_t i0 = g0 + (uint64_t)((u0 + b) * SHAPE_BLOCK + t) * per;
			const int k = kind[b] & SC_KIND;
			if (k >= SC_COPY) {
				const uint4 v = k == SC_ANY ? shape_shift16(x[b], y[b], SC_OFFSET(kind[b])) : x[b];
				shape_st16<(SHAPE_ROWS_STREAM != 0)>(op.out + i0 * elem, op.finish(kind[b], v, y[b]));
			}
		}
	}
	for (; slow; slow &= slow - 1) { /* a border the op walks, a row past the table */
		const uint64_t i0 = g0 + (uint64_t)((__ffs(slow) - 1) * SHAPE_BLOCK + t) * per;
		op.slow(i0, (uint32_t)(op.n - i0 < per ? op.n - i0 : per));
	}
}

/* The element walk alone, for views with no contiguous run: item u * 256 + t of the block's
 * 4096 is thread t's u-th, so a warp's items are adjacent. */
template <class Op>
static __device__ __forceinline__ void shape_items(const Op &op)
{
	const uint64_t first = xpu_group() * SHAPE_BLOCK * XPU_SHAPE_GRAIN + xpu_thread();
#pragma unroll 4
	for (uint32_t u = 0; u < XPU_SHAPE_GRAIN; u++) {
		const uint64_t e = first + (uint64_t)u * SHAPE_BLOCK;
		if (e < op.n)
			op.slow(e, 1);
	}
}

/* ---- pad ------------------------------------------------------------------------------------ */

/* The input coordinate that output coordinate o of an axis (d long, lo before) reads, or -1 (a
 * constant border); reflect has each side shorter than the axis, replicate d > 0. */
static __device__ __forceinline__ int64_t shape_pad_from(uint64_t o, uint64_t lo, uint64_t d, int mode)
{
	const int64_t q = (int64_t)o - (int64_t)lo, n = (int64_t)d;
	if (q >= 0 && q < n)
		return q;
	if (mode == 0)
		return -1;
	if (mode == 2)
		return q < 0 ? 0 : n - 1;
	return q < 0 ? -q : 2 * (n - 1) - q;
}

/* pad's and pad_backward's geometry: the packed dims, before and after (twelve u64 of two u32
 * each) stay kernel arguments, read through accessors with constant indices, so they hold no
 * registers. A scalar is taken as one axis of one element. */
struct shape_pad_geo {
	const unsigned long long *w;
	int r0, rank, mode;

	__device__ void geo(uint64_t geom, const unsigned long long *wp)
	{
		w = wp;
		r0 = (int)(geom & 0xff);
		rank = r0 > 0 ? r0 : 1;
		mode = (int)((geom >> 16) & 0xff);
	}
	__device__ uint64_t D(int k) const { return k < r0 ? shape_u32(w, k) : 1; }
	__device__ uint64_t LO(int k) const { return k < r0 ? shape_u32(w + 4, k) : 0; }
	__device__ uint64_t HI(int k) const { return k < r0 ? shape_u32(w + 8, k) : 0; }
	__device__ uint64_t OD(int k) const { return D(k) + LO(k) + HI(k); }
};

/* dl, lol, odl: the last axis's dim, before and padded dim (len: a chunk's row is an output row). */
struct shape_pad_op : shape_pad_geo, shape_plain {
	uint8_t *out;
	const uint8_t *in, *in_end;
	uint64_t n, len, fill_bits, dl, lol;
	uint32_t elem;
	bool out_al;
	uint4 fill;

	__device__ void init(uint8_t *o, const uint8_t *i, uint64_t geom, uint64_t fb, const unsigned long long *wp)
	{
		uint64_t n_in = 1;
		geo(geom, wp);
		out = o;
		in = i;
		fill_bits = fb;
		elem = (uint32_t)((geom >> 8) & 0xff);
		n = 1;
#pragma unroll
		for (int k = 0; k < 8; k++) { /* unrolled: constant indices into the arguments */
			n *= OD(k);
			n_in *= D(k);
			if (k < rank) { /* the last axis: the last written (k == rank - 1 would index the arguments) */
				dl = D(k);
				lol = LO(k);
				len = OD(k);
			}
		}
		in_end = in + n_in * elem;
		out_al = shape_al16(out);
		fill = shape_splat16(fb, elem);
	}

	/* The input row that output row `row` (every axis but the last) reads, or -1 (border). */
	__device__ int64_t in_row(uint64_t row) const
	{
		uint64_t rem = row, src = 0, stride = 1, x;
#pragma unroll
		for (int k = 6; k >= 0; k--) {
			if (k >= rank - 1)
				continue;
			rem = shape_digit(rem, OD(k), k, &x);
			const int64_t q = shape_pad_from(x, LO(k), D(k), mode);
			if (q < 0)
				return -1;
			src += (uint64_t)q * stride;
			stride *= D(k);
		}
		return (int64_t)src;
	}

	/* Where output row `row`'s input row starts (elements), or -1: a constant border row. */
	__device__ int64_t row_entry(uint64_t row) const
	{
		const int64_t r = in_row(row);
		return r < 0 ? -1 : r * (int64_t)dl;
	}

	/* A chunk inside one output row (its row_entry e): the row's interior copied, a constant
	 * border filled. */
	__device__ void plan_row(int64_t e, uint64_t j, uint32_t per, shape_chunk *c) const
	{
		c->kind = SC_SLOW;
		if (!out_al || j + per > len)
			return;
		if (e < 0) {
			c->kind = SC_FILL;
		} else if (j >= lol && j + per <= lol + dl) {
			c->src = in + ((uint64_t)e + j - lol) * elem;
			c->kind = shape_src_kind(c->src, in, in_end);
		} else if (mode == 0 && (j + per <= lol || j >= lol + dl)) {
			c->kind = SC_FILL;
		}
	}

	__device__ void plan(uint64_t, uint64_t row, uint64_t j, uint32_t per, shape_chunk *c) const
	{
		plan_row(row_entry(row), j, per, c);
	}

	__device__ void slow(uint64_t i0, uint32_t count) const
	{
		for (uint32_t t = 0; t < count; t++) {
			uint64_t j;
			const uint64_t e = i0 + t, row = shape_div(e, len, &j);
			const int64_t r = in_row(row), q = r < 0 ? -1 : shape_pad_from(j, lol, dl, mode);
			if (q < 0)
				shape_store_bits(out + e * elem, fill_bits, elem);
			else
				shape_move(out + e * elem, in + ((uint64_t)r * dl + (uint64_t)q) * elem, elem);
		}
	}
};

/* pad's and pad_backward's geometry arguments: dims, before, after, eight u32 each in four u64. */
#define SHAPE_PAD_PARAMS                                                                                     \
	unsigned long long d01, unsigned long long d23, unsigned long long d45, unsigned long long d67,      \
		unsigned long long b01, unsigned long long b23, unsigned long long b45, unsigned long long b67, \
		unsigned long long a01, unsigned long long a23, unsigned long long a45, unsigned long long a67
#define SHAPE_PAD_ARGS d01, d23, d45, d67, b01, b23, b45, b67, a01, a23, a45, a67

/* pad: each chunk's input row worked out per chunk, or (ROWS) once a group (shape_rows_walk). */
template <bool ROWS>
static __device__ __forceinline__ void shape_pad(uint8_t *out, const uint8_t *in, unsigned long long geom,
						 unsigned long long fill, SHAPE_PAD_PARAMS)
{
	const unsigned long long w[12] = { SHAPE_PAD_ARGS };
	shape_pad_op op;
	op.init(out, in, geom, fill, w);
	if (ROWS)
		shape_rows_walk(op);
	else
		shape_chunks(op);
}

extern "C" __global__ void SHAPE_BOUNDS(4)
pad(uint8_t *out, const uint8_t *in, unsigned long long geom, unsigned long long fill, SHAPE_PAD_PARAMS)
{
	shape_pad<false>(out, in, geom, fill, SHAPE_PAD_ARGS);
}

/* pad with each output row's input row found once a group. */
extern "C" __global__ void SHAPE_BOUNDS(4)
pad_rows(uint8_t *out, const uint8_t *in, unsigned long long geom, unsigned long long fill, SHAPE_PAD_PARAMS)
{
	shape_pad<true>(out, in, geom, fill, SHAPE_PAD_ARGS);
}

/* ---- pad_backward ----------------------------------------------------------------------------- */


/* bf16 from f32: round to nearest even; NaN stays a quiet NaN (as the CPU body does). */
static __device__ __forceinline__ uint16_t shape_bf16(float f)
{
	uint32_t u = __float_as_uint(f);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40);
	return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

/* cumsum's element loads and stores: f32 (0), f16 (2), bf16 (3) as f32. */
static __device__ __forceinline__ float shape_load_f(const uint8_t *p, uint32_t dt)
{
	if (dt == 2)
		return xpu_f16(*(const uint16_t *)p);
	if (dt == 3)
		return __uint_as_float((uint32_t)(*(const uint16_t *)p) << 16);
	return *(const float *)p;
}

static __device__ __forceinline__ void shape_store_f(uint8_t *p, uint32_t dt, float v)
{
	if (dt == 2)
		*(uint16_t *)p = __half_as_ushort(__float2half_rn(v));
	else if (dt == 3)
		*(uint16_t *)p = shape_bf16(v);
	else
		*(float *)p = v;
}

/* Element bits (f32 0, f16 2, bf16 3) as f32, and f32 back to the dtype's bits, narrowed once. */
static __device__ __forceinline__ float shape_bits_f(uint64_t bits, uint32_t dt)
{
	if (dt == 2)
		return xpu_f16((uint16_t)bits);
	if (dt == 3)
		return __uint_as_float((uint32_t)(uint16_t)bits << 16);
	return __uint_as_float((uint32_t)bits);
}

static __device__ __forceinline__ uint64_t shape_f_bits(float v, uint32_t dt)
{
	if (dt == 2)
		return __half_as_ushort(__float2half_rn(v));
	if (dt == 3)
		return shape_bf16(v);
	return __float_as_uint(v);
}

/* a + b of two elements' bits, as the CPU adds them: f64 in f64, the rest in f32. */
static __device__ __forceinline__ uint64_t shape_sum2(uint64_t a, uint64_t b, uint32_t dt)
{
	if (dt == 1)
		return (uint64_t)__double_as_longlong(
			__dadd_rn(__longlong_as_double((long long)a), __longlong_as_double((long long)b)));
	return shape_f_bits(xpu_add(shape_bits_f(a, dt), shape_bits_f(b, dt)), dt);
}

/* An element's sum in the CPU's order: the first term as it is, then each next added, f64 in
 * f64 and the rest in f32, narrowed once (bits). Both sums are kept; dt picks one. */
struct shape_ordered_sum {
	double acc64 = 0;
	float acc32 = 0;

	__device__ void add(uint64_t raw, uint32_t dt, bool first)
	{
		const double v64 = __longlong_as_double((long long)raw);
		const float v32 = shape_bits_f(raw, dt);
		acc64 = first ? v64 : __dadd_rn(acc64, v64);
		acc32 = first ? v32 : xpu_add(acc32, v32);
	}
	__device__ uint64_t bits(uint32_t dt) const
	{
		return dt == 1 ? (uint64_t)__double_as_longlong(acc64) : shape_f_bits(acc32, dt);
	}
};

/* How many upstream positions feed coordinate i of an axis (d long, b before, a after): the
 * CPU body's preimage, reflect's left mirror, interior and right mirror, replicate's edge run. */
static __device__ __forceinline__ uint64_t shape_pre_count(uint64_t i, uint64_t d, uint64_t b, uint64_t a, int mode)
{
	if (mode == 2)
		return (i == d - 1 ? d + b + a : i + b + 1) - (i == 0 ? 0 : i + b);
	if (mode == 0)
		return 1;
	return 1 + (i >= 1 && i <= b) + (i + 2 <= d && d - 1 - i <= a);
}

/* The t-th of those positions, in ascending order. */
static __device__ __forceinline__ uint64_t shape_pre_at(uint64_t i, uint64_t t, uint64_t d, uint64_t b, int mode)
{
	if (mode == 2)
		return (i == 0 ? 0 : i + b) + t;
	if (mode == 1 && i >= 1 && i <= b) {
		if (t == 0)
			return b - i;
		t--;
	}
	return t == 0 ? i + b : b + 2 * (d - 1) - i;
}

/* A gradient element fed by one upstream position is that element's bits (the sum of one term
 * is the term, -0 included), so such chunks are byte copies. In a row whose other axes have one
 * preimage each, a reflected border element has two terms, the interior and one mirror: the
 * chunk loads its interior vector as a copy would, the mirrors element by element (side_load),
 * and adds them in the CPU's order (finish). The rest sum term by term in that order (slow).
 * One op for every dtype (elem, dt at run time): the kernel inlines it for f32, where they are
 * constants, and calls it for the others (a walk per dtype in one kernel crowds the registers).
 * len, lol, hil, odl: the last axis's dim, before, after and padded dim. */
struct shape_pad_bwd_op : shape_pad_geo {
	uint8_t *out; /* the gradient */
	const uint8_t *up, *up_end;
	uint64_t n, len, lol, hil, odl;
	uint32_t elem, dt;
	bool out_al;
	uint4 fill;

	__device__ void init(uint8_t *g, const uint8_t *u, uint64_t geom, const unsigned long long *wp)
	{
		uint64_t n_up = 1;
		geo(geom, wp);
		out = g;
		up = u;
		dt = (uint32_t)((geom >> 8) & 0xff);
		elem = dt == 1 ? 8 : dt == 0 ? 4 : 2;
		n = 1;
#pragma unroll
		for (int k = 0; k < 8; k++) {
			n *= D(k);
			n_up *= OD(k);
			if (k < rank) { /* the last axis: the last written (k == rank - 1 would index the arguments) */
				len = D(k);
				lol = LO(k);
				hil = HI(k);
				odl = OD(k);
			}
		}
		up_end = shape_kept(up + n_up * elem);
		out_al = shape_al16(out);
		fill = make_uint4(0, 0, 0, 0);
	}

	/* The upstream row of gradient row `row` where each axis but the last has one preimage, or -1. */
	__device__ int64_t up_row(uint64_t row) const
	{
		uint64_t rem = row, r = 0, stride = 1, x;
#pragma unroll
		for (int k = 6; k >= 0; k--) {
			if (k >= rank - 1)
				continue;
			rem = shape_digit(rem, D(k), k, &x);
			if (shape_pre_count(x, D(k), LO(k), HI(k), mode) != 1)
				return -1;
			r += (x + LO(k)) * stride;
			stride *= OD(k);
		}
		return (int64_t)r;
	}

	/* Where gradient row `row`'s upstream row starts (elements), or -1: the row's elements
	 * have several terms along an outer axis (the element walk sums them). */
	__device__ int64_t row_entry(uint64_t row) const
	{
		const int64_t r = up_row(row);
		return r < 0 ? -1 : r * (int64_t)odl;
	}

	/* A chunk inside one gradient row (its row_entry e) whose elements have one term, or
	 * reflect's two (interior and a mirror on one side, the same side for the whole chunk; the
	 * interior aligned, as the mirrors take the place of SC_ANY's second vector). Only a chunk
	 * that reaches a reflected border works out which of its elements have mirrors. */
	__device__ void plan_row(int64_t e, uint64_t j, uint32_t per, shape_chunk *c) const
	{
		c->kind = SC_SLOW;
		if (e < 0 || !out_al || j + per > len)
			return;
		if (mode == 2 && ((j == 0 && lol) || (j + per >= len && hil))) /* replicate's edge runs */
			return;
		const uint8_t *base = up + (uint64_t)e * elem;
		c->src = base + (j + lol) * elem;
		c->kind = shape_src_kind(c->src, up, up_end);
		if (mode != 1 || (j > lol && j + per + hil < len))
			return;
		uint32_t left = 0, right = 0;
#pragma unroll
		for (uint32_t t = 0; t < 8; t++) {
			const uint64_t i = j + t;
			left |= (uint32_t)(t < per && i >= 1 && i <= lol) << t;
			right |= (uint32_t)(t < per && i + 2 <= len && len - 1 - i <= hil) << t;
		}
		if (!(left | right))
			return;
		if ((left && right) || c->kind != SC_COPY) {
			c->kind = SC_SLOW;
			return;
		}
		/* element t's mirror is element 0's less t */
		const int64_t m0 = left ? (int64_t)lol - (int64_t)j : (int64_t)(lol + 2 * (len - 1)) - (int64_t)j;
		c->aux = base + m0 * (int64_t)elem;
		c->kind |= (int)((left | right) << 16) | (left ? SC_LEFT : 0);
	}

	__device__ void plan(uint64_t, uint64_t row, uint64_t j, uint32_t per, shape_chunk *c) const
	{
		plan_row(row_entry(row), j, per, c);
	}

	/* The mirror terms, element t's at aux - t * elem, packed as the chunk's elements are. */
	__device__ void side_load(int kind, const uint8_t *aux, uint4 *s) const
	{
		const uint32_t m = SC_MASK(kind);
		if (!m)
			return;
		if (elem == 8) {
			const uint64_t a = m & 1 ? *(const uint64_t *)aux : 0, b = m & 2 ? *(const uint64_t *)(aux - 8) : 0;
			*s = make_uint4((uint32_t)a, (uint32_t)(a >> 32), (uint32_t)b, (uint32_t)(b >> 32));
		} else if (elem == 4) {
			*s = make_uint4(m & 1 ? xpu_ld32(aux) : 0, m & 2 ? xpu_ld32(aux - 4) : 0, m & 4 ? xpu_ld32(aux - 8) : 0,
					m & 8 ? xpu_ld32(aux - 12) : 0);
		} else {
			uint32_t h[8];
#pragma unroll
			for (int t = 0; t < 8; t++)
				h[t] = m >> t & 1 ? xpu_ld16(aux - 2 * t) : 0;
			*s = make_uint4(h[0] | h[1] << 16, h[2] | h[3] << 16, h[4] | h[5] << 16, h[6] | h[7] << 16);
		}
	}

	/* Interior bits iv plus mirror bits mv in the CPU's order: the left mirror comes first. */
	__device__ uint64_t two(uint64_t iv, uint64_t mv, int kind) const
	{
		return kind & SC_LEFT ? shape_sum2(mv, iv, dt) : shape_sum2(iv, mv, dt);
	}

	/* Two halves of a word (bits m of the chunk's mask): each summed or kept. */
	__device__ uint32_t halves(uint32_t iw, uint32_t mw, uint32_t m, int kind) const
	{
		const uint32_t lo = m & 1 ? (uint32_t)two(iw & 0xffff, mw & 0xffff, kind) : iw & 0xffff;
		const uint32_t hi = m & 2 ? (uint32_t)two(iw >> 16, mw >> 16, kind) : iw >> 16;
		return (lo & 0xffff) | hi << 16;
	}

	__device__ uint4 finish(int kind, uint4 v, const uint4 &s) const
	{
		const uint32_t m = SC_MASK(kind);
		if (!m)
			return v;
		if (elem == 8) {
			const uint64_t a = m & 1 ? two((uint64_t)v.y << 32 | v.x, (uint64_t)s.y << 32 | s.x, kind) : (uint64_t)v.y << 32 | v.x;
			const uint64_t b = m & 2 ? two((uint64_t)v.w << 32 | v.z, (uint64_t)s.w << 32 | s.z, kind) : (uint64_t)v.w << 32 | v.z;
			return make_uint4((uint32_t)a, (uint32_t)(a >> 32), (uint32_t)b, (uint32_t)(b >> 32));
		}
		if (elem == 4)
			return make_uint4(m & 1 ? (uint32_t)two(v.x, s.x, kind) : v.x, m & 2 ? (uint32_t)two(v.y, s.y, kind) : v.y,
					  m & 4 ? (uint32_t)two(v.z, s.z, kind) : v.z, m & 8 ? (uint32_t)two(v.w, s.w, kind) : v.w);
		return make_uint4(halves(v.x, s.x, m, kind), halves(v.y, s.y, m >> 2, kind), halves(v.z, s.z, m >> 4, kind),
				  halves(v.w, s.w, m >> 6, kind));
	}

	/* Term t of element e: t's digits (the last axis fastest, each in base its axis's count)
	 * pick one position per axis, so the terms come in ascending upstream index, as the CPU
	 * body's odometer visits them. The coordinates are decoded again per term: no arrays. */
	__device__ uint64_t term(uint64_t e, uint64_t t, uint64_t *count) const
	{
		uint64_t rem = e, digits = t, off = 0, stride = 1, total = 1;
#pragma unroll
		for (int k = 7; k >= 0; k--) {
			uint64_t x, tk = 0;
			if (k >= rank)
				continue;
			rem = shape_digit(rem, D(k), k, &x);
			const uint64_t ck = shape_pre_count(x, D(k), LO(k), HI(k), mode);
			if (ck > 1)
				digits = shape_div(digits, ck, &tk);
			off += shape_pre_at(x, tk, D(k), LO(k), mode) * stride;
			stride *= OD(k);
			total *= ck;
		}
		*count = total;
		return off;
	}

	/* The sum from the first term (a lone term is copied, -0 included), f64 in f64 and the
	 * rest in f32, narrowed once on store. SHAPE_SUM_AHEAD terms at a time: their places found
	 * one by one (a loop, so term is here once), their loads issued together, then added in
	 * order. */
	__device__ void sum_one(uint64_t e) const
	{
		uint64_t total = 1, off[SHAPE_SUM_AHEAD]; /* the first term gives the real count */
		shape_ordered_sum sum;
		for (uint64_t t0 = 0; t0 < total; t0 += SHAPE_SUM_AHEAD) {
			uint64_t raw[SHAPE_SUM_AHEAD];
			uint32_t m = 0;
#pragma unroll 1
			for (; m < SHAPE_SUM_AHEAD && t0 + m < total; m++)
				off[m] = term(e, t0 + m, &total);
#pragma unroll
			for (uint32_t u = 0; u < SHAPE_SUM_AHEAD; u++)
				raw[u] = u < m ? shape_load_bits(up + off[u] * elem, elem) : 0;
#pragma unroll
			for (uint32_t u = 0; u < SHAPE_SUM_AHEAD; u++) {
				if (u >= m)
					break;
				sum.add(raw[u], dt, t0 + u == 0);
			}
		}
		shape_store_bits(out + e * elem, sum.bits(dt), elem);
	}

	__device__ void slow(uint64_t i0, uint32_t count) const;
	__device__ uint32_t rows_sum(uint64_t i0, uint32_t mask) const;
};

/* The element walk of chunk i0, a function of its own: its sums (the f64 and f32 ones both)
 * need registers the chunk walk is holding. The geometry comes as values (nothing in memory);
 * the op is set up again here. */
static __device__ __noinline__ void shape_pad_bwd_walk(uint8_t *grad, const uint8_t *up, uint64_t geom,
						       const ulonglong4 d, const ulonglong4 b, const ulonglong4 a,
						       uint64_t i0, uint32_t count)
{
	const unsigned long long w[12] = { d.x, d.y, d.z, d.w, b.x, b.y, b.z, b.w, a.x, a.y, a.z, a.w };
	shape_pad_bwd_op op;
	op.init(grad, up, geom, w);
	for (uint32_t t = 0; t < count; t++)
		op.sum_one(i0 + t);
}

__device__ void shape_pad_bwd_op::slow(uint64_t i0, uint32_t count) const
{
	const uint64_t geom = (uint64_t)r0 | (uint64_t)dt << 8 | (uint64_t)mode << 16;
	shape_pad_bwd_walk(out, up, geom, make_ulonglong4(w[0], w[1], w[2], w[3]), make_ulonglong4(w[4], w[5], w[6], w[7]),
			   make_ulonglong4(w[8], w[9], w[10], w[11]), i0, count);
}


/* Columns [*lo, *hi) of a gradient row have one term each along the last axis: reflect's
 * mirrors are columns 1 .. lol and len - 1 - hil .. len - 2, replicate's edge runs columns 0,
 * len - 1. */
static __device__ __forceinline__ void shape_pbw_inner(const shape_pad_bwd_op &op, uint32_t *lo, uint32_t *hi)
{
	const uint32_t len = (uint32_t)op.len;
	*lo = op.mode == 1 ? (uint32_t)(op.lol + 1 < len ? op.lol + 1 : len) : op.mode == 2 && op.lol ? 1 : 0;
	*hi = op.mode == 1 ? (uint32_t)(op.hil + 1 < len ? len - 1 - op.hil : 0) : op.mode == 2 && op.hil ? len - 1 : len;
}

/* The chunks `mask` (bit b: chunk i0 + b * 32 * per, 16 bytes each) of a lane's batch that lie
 * in one gradient row on an outer axis's border, which has 2 .. SHAPE_PBW_ROW_TERMS upstream
 * rows (reflect's mirrored row, replicate's edge rows), and in its columns of one term: the
 * row's term places decoded once, then each chunk's term vectors loaded together and added
 * element by element in the reference's order (ascending upstream index, the first term as it
 * is, f64 in f64, the rest in f32, narrowed once). Returns the chunks done; the rest take the
 * element walk. That walk did whole rows item by item, every term's place decoded again, one
 * warp a row, after the batches: the last group's row ran on after every other group had ended
 * (H200, 1 GiB f32, rows of 1024: reflect 3422-3518 GB/s with padding ((1, 1), (16, 16)) and
 * 4023 with ((0, 0), (16, 16)); this way 3592-3708 and 4030; docs/PERF.md). A function of its
 * own, as the element walk: the chunk walk's registers stay its own. */
static __device__ __noinline__ uint32_t shape_pbw_rows_sum(uint8_t *grad, const uint8_t *up, uint64_t geom,
							   const ulonglong4 d, const ulonglong4 b, const ulonglong4 a,
							   uint64_t i0, uint32_t mask)
{
	const unsigned long long w[12] = { d.x, d.y, d.z, d.w, b.x, b.y, b.z, b.w, a.x, a.y, a.z, a.w };
	shape_pad_bwd_op op;
	op.init(grad, up, geom, w);
	const uint32_t elem = op.elem, per = 16 / elem, step = 32 * per;
	uint32_t lo, hi;
	shape_pbw_inner(op, &lo, &hi);
	const uint64_t first = i0 + (uint64_t)(__ffs(mask) - 1) * step, rs = first - first % op.len;
	if (!op.out_al || lo >= hi)
		return 0;
	uint64_t total = 1, off[SHAPE_PBW_ROW_TERMS]; /* term t of column lo */
	off[0] = op.term(rs + lo, 0, &total);
	if (total < 2 || total > SHAPE_PBW_ROW_TERMS)
		return 0;
	for (uint32_t t = 1; t < total; t++)
		off[t] = op.term(rs + lo, t, &total);
	uint32_t done = 0;
#pragma unroll 1
	for (uint32_t m = mask; m; m &= m - 1) {
		const uint32_t bit = __ffs(m) - 1;
		const uint64_t ic = i0 + (uint64_t)bit * step;
		if (ic < rs || ic + per > rs + hi || ic - rs < lo)
			continue;
		uint4 v[SHAPE_PBW_ROW_TERMS];
		bool al = true;
#pragma unroll
		for (uint32_t t = 0; t < SHAPE_PBW_ROW_TERMS; t++) {
			const uint8_t *p = up + (off[t < total ? t : 0] + (ic - rs - lo)) * elem;
			al = al && !((uintptr_t)p & 15);
			v[t] = t < total && al ? shape_ld16<(SHAPE_ROWS_STREAM != 0)>(p) : make_uint4(0, 0, 0, 0);
		}
		if (!al)
			continue;
		uint4 r = make_uint4(0, 0, 0, 0);
#pragma unroll
		for (uint32_t u = 0; u < 8; u++) {
			if (u >= per)
				break;
			shape_ordered_sum sum;
#pragma unroll
			for (uint32_t t = 0; t < SHAPE_PBW_ROW_TERMS; t++) {
				if (t >= total)
					break;
				sum.add(shape_lane(v[t], u, elem), op.dt, t == 0);
			}
			shape_lane_set(&r, u, elem, sum.bits(op.dt));
		}
		shape_st16<(SHAPE_ROWS_STREAM != 0)>(grad + ic * elem, r);
		done |= 1u << bit;
	}
	return done;
}

__device__ uint32_t shape_pad_bwd_op::rows_sum(uint64_t i0, uint32_t mask) const
{
	const uint64_t geom = (uint64_t)r0 | (uint64_t)dt << 8 | (uint64_t)mode << 16;
	return shape_pbw_rows_sum(out, up, geom, make_ulonglong4(w[0], w[1], w[2], w[3]),
				  make_ulonglong4(w[4], w[5], w[6], w[7]), make_ulonglong4(w[8], w[9], w[10], w[11]), i0, mask);
}

/* ---- pad_backward_rows: the walk ---------------------------------------------------------------
 * A group covers XPU_SHAPE_ROW_GROUPS * 4096 gradient items (the launcher's rows grid) and finds
 * each row's upstream row once, into a table, as shape_rows_walk does; what differs is the
 * work a chunk costs and what stays live across a load. shape_rows_walk here ran at 79-80 % of
 * copy: 3 groups an SM (80 registers) with 4 chunks in flight a thread, which a bare copy of the
 * same rows held to 3 blocks an SM matches (3060 GB/s; 4000 at 8 blocks), and some 110
 * instructions a warp a chunk (ncu). Here:
 * - a lane's SHAPE_PBW_BATCH chunks that lie in one row (at 8 a batch they span 900 f32 items,
 *   450 f64, 1800 f16; at 4, 388, 194, 776) load from one source pointer, 512 bytes a chunk
 *   on, with no table reads;
 * - a chunk whose source is not 16-aligned takes its second vector from the lane that loaded it
 *   (the next chunk of the row), the last lane from lane 0's next chunk or, at the batch's end,
 *   a load of its own;
 * - every other chunk (a border with more terms, the last chunk of an unaligned row, a row with
 *   several upstream rows) goes the general way (plan_row) between its batch's loads and stores,
 *   so it waits while they are in flight (after every batch instead, a measured variant no
 *   longer in the tree: 2738-2786 GB/s against 3240-3269); a one-row lane's reflected borders
 *   find their mirror mask in closed form; the element walks come last.
 * Each warp takes 32 * SHAPE_PBW_BATCH consecutive chunks a batch (lane l chunks l, l + 32, ...),
 * so rows of 32 * SHAPE_PBW_BATCH chunks or more give every warp its rows' borders.
 * H200, 1 GiB f32, reflect, rows of 1024, three blocks an SM: 3427-3485 GB/s at 4 chunks a
 * batch, 3304-3350 at 8 (more spilled), shape_rows_walk 3086-3098 (copy 3863-3925); with no
 * border work at all (a timing-only build, wrong borders) 3512-3555. Two blocks of 8 chunks a
 * thread (128 registers, no spill; SHAPE_PBW_ROWS_BLOCKS below) against three of 4 (80, 64
 * bytes spilled), alternated in one call: 3452 / 3514 / 3379 against 3430 / 3480 / 3337 (16
 * chunks a thread at two blocks: 2919-3055). A thread takes XPU_SHAPE_ROW_GROUPS * elem /
 * SHAPE_PBW_BATCH whole batches: 8 is the most f16 allows. */

/* Chunk b of batch k of thread t, in the group's chunks. */
static __device__ __forceinline__ uint32_t shape_pbw_chunk(uint32_t k, uint32_t b, uint32_t t)
{
	return ((k * (SHAPE_BLOCK / 32) + (t >> 5)) * SHAPE_PBW_BATCH + b) * 32 + (t & 31);
}

/* One chunk the general way: its plan from the row's table entry, its loads (an unaligned
 * source's two vectors, a border's mirror terms), its store; 1 where it takes the element walk. */
static __device__ __forceinline__ bool shape_pbw_general(const shape_pad_bwd_op &op, int64_t e, uint32_t j,
							  uint64_t i0)
{
	const uint32_t per = 16 / op.elem;
	shape_chunk c;
	op.plan_row(e, j, per, &c);
	const int k = c.kind & SC_KIND;
	if (k != SC_COPY && k != SC_ANY)
		return true;
	const uint8_t *a = shape_floor16(c.src);
	const uint4 x = shape_ld16<(SHAPE_ROWS_STREAM != 0)>(a);
	uint4 y = k == SC_ANY ? shape_ld16<(SHAPE_ROWS_STREAM != 0)>(a + 16) : make_uint4(0, 0, 0, 0);
	op.side_load(c.kind, c.aux, &y);
	const uint4 v = k == SC_ANY ? shape_shift16(x, y, (uint32_t)(uintptr_t)c.src & 15) : x;
	shape_st16<(SHAPE_ROWS_STREAM != 0)>(op.out + i0 * op.elem, op.finish(c.kind, v, y));
	return false;
}

/* The mirror plan of a reflected border chunk of a one-row lane, in closed form (plan_row's,
 * without its loop): its columns jb .. jb + per - 1 of a row whose upstream row starts at row
 * (column 0 of the padded row); kind as plan_row gives it, aux its mirror terms' first place.
 * false where the chunk has mirrors on both sides (the general way). */
static __device__ __forceinline__ bool shape_pbw_mirror(const shape_pad_bwd_op &op, const uint8_t *row, uint32_t jb,
							 int *kind, const uint8_t **aux)
{
	const int per = 16 / (int)op.elem, j = (int)jb, lol = (int)op.lol, len = (int)op.len, hil = (int)op.hil;
	/* elements t0 .. t1 of the chunk: left mirrors (columns 1 .. lol), right (len - 1 - hil .. len - 2) */
	const int l0 = max(1 - j, 0), l1 = min(lol - j, per - 1), r0 = max(len - 1 - hil - j, 0), r1 = min(len - 2 - j, per - 1);
	const uint32_t left = l0 <= l1 ? (2u << l1) - (1u << l0) : 0, right = r0 <= r1 ? (2u << r1) - (1u << r0) : 0;
	if (left && right)
		return false;
	*kind = SC_COPY | (int)((left | right) << 16) | (left ? SC_LEFT : 0);
	*aux = row + (int64_t)(left ? lol - j : lol + 2 * (len - 1) - j) * op.elem;
	return true;
}

/* A reflected border chunk of a one-row lane, its interior aligned at a: its mirror plan, then
 * side_load and finish as the general way. false where the chunk has mirrors on both sides. */
static __device__ __forceinline__ bool shape_pbw_border(const shape_pad_bwd_op &op, const uint8_t *row, uint32_t jb,
							 const uint8_t *a, uint8_t *dst)
{
	int kind;
	const uint8_t *aux;
	if (!shape_pbw_mirror(op, row, jb, &kind, &aux))
		return false;
	uint4 y = make_uint4(0, 0, 0, 0);
	op.side_load(kind, aux, &y);
	shape_st16<(SHAPE_ROWS_STREAM != 0)>(dst, op.finish(kind, shape_ld16<(SHAPE_ROWS_STREAM != 0)>(a), y));
	return true;
}

/* A replicated edge chunk of a one-row lane (the row's first chunk under a left pad, its last
 * under a right pad): its elements copied from the interior, the edge element's lol + 1 (or
 * hil + 1) terms summed as the reference sums them, in ascending upstream order, their loads
 * SHAPE_SUM_AHEAD at a time, all from the lane's own row. The element walk did these one lane
 * at a time with every term's place decoded again (H200, 1 GiB f32, padding ((1, 1), (16, 16)):
 * replicate 462 GB/s where reflect ran 3523; docs/PERF.md). row: the padded upstream row's first
 * element. false where the chunk is both edges or its interior is off 16 bytes (the general
 * way). */
static __device__ __forceinline__ bool shape_pbw_edge(const shape_pad_bwd_op &op, const uint8_t *row, uint32_t jb,
						       uint8_t *dst)
{
	const uint32_t elem = op.elem, per = 16 / elem;
	const bool left = jb == 0 && op.lol, right = jb + per == op.len && op.hil;
	const uint8_t *a = row + (jb + op.lol) * elem;
	if (left == right || ((uintptr_t)a & 15))
		return false;
	const uint64_t first = left ? 0 : op.len - 1 + op.lol, count = (left ? op.lol : op.hil) + 1;
	shape_ordered_sum sum;
	for (uint64_t t0 = 0; t0 < count; t0 += SHAPE_SUM_AHEAD) {
		uint64_t raw[SHAPE_SUM_AHEAD];
#pragma unroll
		for (uint32_t u = 0; u < SHAPE_SUM_AHEAD; u++)
			raw[u] = t0 + u < count ? shape_load_bits(row + (first + t0 + u) * elem, elem) : 0;
#pragma unroll
		for (uint32_t u = 0; u < SHAPE_SUM_AHEAD; u++) {
			if (t0 + u >= count)
				break;
			sum.add(raw[u], op.dt, t0 + u == 0);
		}
	}
	uint4 v = shape_ld16<(SHAPE_ROWS_STREAM != 0)>(a);
	shape_lane_set(&v, left ? 0 : per - 1, elem, sum.bits(op.dt));
	shape_st16<(SHAPE_ROWS_STREAM != 0)>(dst, v);
	return true;
}

static __device__ __forceinline__ void shape_pbw_rows_walk(const shape_pad_bwd_op &op)
{
	constexpr bool ST = SHAPE_ROWS_STREAM != 0;
	constexpr uint32_t B = SHAPE_PBW_BATCH;
	__shared__ int64_t entry[XPU_SHAPE_ROWS];
	const uint32_t elem = op.elem, per = 16 / elem, len = (uint32_t)op.len, t = xpu_thread(), lane = t & 31;
	const uint32_t batches = XPU_SHAPE_ROW_GROUPS * elem / B; /* elem >= 2: whole batches */
	/* Block 0 takes the last group (SHAPE_PBW_LAST_FIRST): a rows axis padded at its end puts a
	 * row with several upstream rows there, whose chunks cost more than a plain group's; started
	 * first, it ends inside the launch instead of after it. */
	const uint64_t groups = (uint64_t)gridDim.x * gridDim.y * gridDim.z;
	const uint64_t grp = SHAPE_PBW_LAST_FIRST ? (xpu_group() + groups - 1) % groups : xpu_group();
	const uint64_t g0 = grp * (SHAPE_BLOCK * XPU_SHAPE_GRAIN * XPU_SHAPE_ROW_GROUPS);
	const uint64_t row0 = g0 / len;
	for (uint32_t r = t; r < XPU_SHAPE_ROWS; r += SHAPE_BLOCK)
		entry[r] = op.row_entry(row0 + r);
	__syncthreads();
	const uint32_t base = (uint32_t)(g0 - row0 * len); /* the group's first item, in its row */
	const uint32_t qb = 32 * per / len, rb = 32 * per - qb * len; /* from chunk b to b + 1 */
	/* the group's chunks below this are inside the gradient (items past n: none) */
	const uint32_t chunks = (uint32_t)((op.n - g0 + per - 1) / per < 0x10000000u ? (op.n - g0 + per - 1) / per : 0x10000000u);
	/* a chunk in columns [lo_edge, hi_edge) has one term an element */
	const uint64_t lol = op.lol;
	uint32_t lo_edge, hi_edge;
	shape_pbw_inner(op, &lo_edge, &hi_edge);
	const uint8_t *up = op.up + lol * elem; /* column 0's upstream element, in upstream row 0 */
	uint8_t *out = op.out + g0 * elem;        /* the group's first chunk */
	uint32_t slow = 0; /* bit k * B + b: chunk b of batch k takes the element walk, at the end */
#pragma unroll 1
	for (uint32_t k = 0; k < batches; k++) {
		uint4 x[B], xe = make_uint4(0, 0, 0, 0);
		uint32_t offs = 0, odd = 0, plain = 0; /* 4 bits a chunk: source offset; bit b: unaligned, plain */
		uint32_t early = 0; /* bit b (0 or B - 1): a border chunk whose mirror terms are in ey */
		int ek[2] = { 0, 0 };
		uint4 ey[2] = { make_uint4(0, 0, 0, 0), make_uint4(0, 0, 0, 0) };
		const uint32_t c0 = shape_pbw_chunk(k, 0, t);
		uint32_t at = base + c0 * per, rel = at / len, j = at - rel * len;
		const uint32_t j0 = j, step = 32 * per; /* items from chunk b to b + 1 */
		const int64_t e0 = rel < XPU_SHAPE_ROWS ? entry[rel] : -1;
		/* the lane's B chunks in one row: one source pointer, 512 bytes a chunk on, no table reads */
		const bool one_row = j0 + (B - 1) * step + per <= len && e0 >= 0 && op.out_al && c0 + 32 * (B - 1) < chunks;
		if (one_row) {
			const uint8_t *src = up + (e0 + (int64_t)j0) * elem, *a = shape_floor16(src);
			const uint32_t off = (uint32_t)(uintptr_t)src & 15;
#pragma unroll
			for (uint32_t b = 0; b < B; b++) {
				const uint32_t jb = j0 + b * step;
				x[b] = shape_ld16<ST>(a + 512 * b);
				plain |= (uint32_t)(jb >= lo_edge && jb + per <= hi_edge && !(off && jb + per == len)) << b;
			}
			if (lane == 31 && off && (plain >> (B - 1) & 1))
				xe = shape_ld16<ST>(a + 512 * (B - 1) + 16);
			offs = off * (0xffffffffu / 15); /* off in every 4 bits */
			odd = off ? (1u << B) - 1 : 0;
#if SHAPE_PBW_EARLY_BORDER
			/* Rows of 32 * B chunks put a row's reflected borders at a lane's first and last
			 * chunks: their mirror terms go out now, with the batch, not one round trip each
			 * after it. */
			if (op.mode == 1 && !off) {
				const uint8_t *row = up + (e0 - (int64_t)lol) * elem, *aux;
				if (!(plain & 1) && shape_pbw_mirror(op, row, j0, &ek[0], &aux)) {
					op.side_load(ek[0], aux, &ey[0]);
					early |= 1;
				}
				if (!(plain >> (B - 1) & 1) && shape_pbw_mirror(op, row, j0 + (B - 1) * step, &ek[1], &aux)) {
					op.side_load(ek[1], aux, &ey[1]);
					early |= 1u << (B - 1);
				}
			}
#endif
		} else {
#pragma unroll
			for (uint32_t b = 0; b < B; b++) {
				const int64_t e = rel < XPU_SHAPE_ROWS ? entry[rel] : -1;
				const bool row = c0 + 32 * b < chunks && op.out_al && e >= 0;
				const uint8_t *src = up + (e + (int64_t)j) * elem, *a = shape_floor16(src);
				const uint32_t off = (uint32_t)(uintptr_t)src & 15;
				const bool ok = row && j >= lo_edge && j + per <= hi_edge && !(off && j + per == len);
				x[b] = row ? shape_ld16<ST>(a) : make_uint4(0, 0, 0, 0);
				if (b == B - 1 && lane == 31 && ok && off)
					xe = shape_ld16<ST>(a + 16);
				offs |= off << (4 * b);
				odd |= (uint32_t)(off != 0) << b;
				plain |= (uint32_t)ok << b;
				j += rb;
				rel += qb;
				if (j >= len) {
					j -= len;
					rel++;
				}
			}
		}
		/* the rest of the batch, one at a time, while its loads are in flight */
#pragma unroll 1
		for (uint32_t rest = ~(plain | early) & ((1u << B) - 1); rest; rest &= rest - 1) {
			const uint32_t b = __ffs(rest) - 1, c = c0 + 32 * b;
			if (c >= chunks)
				continue;
			uint32_t rel_b = rel, j_b = j0 + b * step; /* one_row's */
#if SHAPE_PBW_SLIM_BORDER
			if (one_row && op.mode == 1 && !odd &&
			    shape_pbw_border(op, up + (e0 - (int64_t)lol) * elem, j_b, up + (e0 + (int64_t)j_b) * elem, out + c * 16))
				continue;
#endif
			if (one_row && op.mode == 2 && shape_pbw_edge(op, up + (e0 - (int64_t)lol) * elem, j_b, out + c * 16))
				continue;
			if (!one_row) {
				rel_b = (base + c * per) / len;
				j_b = base + c * per - rel_b * len;
			}
			const int64_t e = rel_b < XPU_SHAPE_ROWS ? entry[rel_b] : -1;
			if (shape_pbw_general(op, e, j_b, g0 + (uint64_t)c * per))
				slow |= 1u << (k * B + b);
		}
		const bool shift = shape_any(odd != 0); /* the same on every lane */
#pragma unroll
		for (uint32_t b = 0; b < B; b++) {
			uint4 v = x[b];
			if (shift) {
				const uint4 next = shape_shfl16(x[b], (int)lane + 1);
				const uint4 first = b + 1 < B ? shape_shfl16(x[b + 1 < B ? b + 1 : b], 0) : xe;
				if (odd >> b & 1)
					v = shape_shift16(x[b], lane == 31 ? first : next, offs >> (4 * b) & 15);
			}
			if (plain >> b & 1)
				shape_st16<ST>(out + (c0 + 32 * b) * 16, v);
			else if ((b == 0 || b == B - 1) && (early >> b & 1))
				shape_st16<ST>(out + (c0 + 32 * b) * 16, op.finish(ek[b ? 1 : 0], x[b], ey[b ? 1 : 0]));
		}
	}
	/* a batch's chunks in a row with several upstream rows as vectors, the rest element by element */
	while (slow) {
		const uint32_t k = (__ffs(slow) - 1) / B, all = (1u << B) - 1;
		const uint64_t i0 = g0 + (uint64_t)shape_pbw_chunk(k, 0, t) * per;
		const uint32_t mine = slow >> (k * B) & all;
		slow &= ~(all << (k * B));
		for (uint32_t rest = mine & ~op.rows_sum(i0, mine); rest; rest &= rest - 1) {
			const uint64_t ib = i0 + (uint64_t)(__ffs(rest) - 1) * 32 * per;
			op.slow(ib, (uint32_t)(op.n - ib < per ? op.n - ib : per));
		}
	}
}

/* The walk of pad_backward: each chunk's upstream row worked out per chunk, or (ROWS) once a
 * group (shape_rows_walk). */
template <bool ROWS>
static __device__ __forceinline__ void shape_pad_bwd_walk_all(const shape_pad_bwd_op &op)
{
	if (ROWS)
		shape_pbw_rows_walk(op);
	else
		shape_chunks(op);
}

/* f64, f16 and bf16: a function of its own, whose registers are its own (it saves what it
 * uses on entry), so that f32's walk, inlined in the kernel with its element a constant, keeps
 * the kernel's registers to itself. The geometry comes as values: nothing is in memory. */
template <bool ROWS>
static __device__ __noinline__ void shape_pad_bwd_other(uint8_t *grad, const uint8_t *up, uint64_t geom,
							SHAPE_PAD_PARAMS)
{
	const unsigned long long w[12] = { SHAPE_PAD_ARGS };
	shape_pad_bwd_op op;
	op.init(grad, up, geom, w);
	shape_pad_bwd_walk_all<ROWS>(op);
}

template <bool ROWS>
static __device__ __forceinline__ void shape_pad_bwd(uint8_t *grad, const uint8_t *up, unsigned long long geom,
						     SHAPE_PAD_PARAMS)
{
	if ((geom >> 8 & 0xff) != 0) {
		shape_pad_bwd_other<ROWS>(grad, up, geom, SHAPE_PAD_ARGS);
		return;
	}
	const unsigned long long w[12] = { SHAPE_PAD_ARGS };
	shape_pad_bwd_op op;
	op.init(grad, up, geom & ~(0xffull << 8), w); /* f32: dt 0, a constant from here on */
	shape_pad_bwd_walk_all<ROWS>(op);
}

extern "C" __global__ void SHAPE_BOUNDS(5)
pad_backward(uint8_t *grad, const uint8_t *up, unsigned long long geom, SHAPE_PAD_PARAMS)
{
	shape_pad_bwd<false>(grad, up, geom, SHAPE_PAD_ARGS);
}

/* pad_backward with each gradient row's upstream row found once a group (shape_pbw_rows_walk);
 * its blocks an SM: SHAPE_PBW_ROWS_BLOCKS (shape_tuning.cuh). */
extern "C" __global__ void SHAPE_BOUNDS(SHAPE_PBW_ROWS_BLOCKS)
pad_backward_rows(uint8_t *grad, const uint8_t *up, unsigned long long geom, SHAPE_PAD_PARAMS)
{
	shape_pad_bwd<true>(grad, up, geom, SHAPE_PAD_ARGS);
}

/* ---- flip, roll ---------------------------------------------------------------------------------- */

/* flip: out[o, j, i] = in[o, dim - 1 - j, i]. With inner == 1 a chunk reads its mirror run
 * and reverses it in registers; with inner > 1 its runs are the inner rows, in order. len: a
 * chunk's row, dim (inner == 1) or inner. */
struct shape_flip_op : shape_plain {
	uint8_t *out;
	const uint8_t *in, *in_end;
	uint64_t n, dim, inner, len;
	uint32_t elem;
	bool out_al;
	uint4 fill;

	__device__ void init(uint8_t *o, const uint8_t *i, uint64_t outer, uint64_t dm, uint64_t inr, uint64_t el)
	{
		out = o;
		in = i;
		elem = (uint32_t)el;
		n = outer * dm * inr;
		in_end = in + n * elem;
		dim = dm;
		inner = inr;
		len = inner == 1 ? dim : inner;
		out_al = shape_al16(out);
		fill = make_uint4(0, 0, 0, 0);
	}

	/* The source item of output item e. */
	__device__ uint64_t source(uint64_t e) const
	{
		uint64_t i, j;
		const uint64_t o = shape_div(shape_div(e, inner, &i), dim, &j);
		return (o * dim + dim - 1 - j) * inner + i;
	}

	__device__ void plan(uint64_t i0, uint64_t row, uint64_t j, uint32_t per, shape_chunk *c) const
	{
		uint64_t s;
		c->kind = SC_SLOW;
		if (!out_al || j + per > len)
			return;
		if (inner == 1) { /* row: o */
			s = row * dim + dim - j - per;
		} else { /* row: o * dim + j', j: i */
			uint64_t jj;
			const uint64_t o = shape_div(row, dim, &jj);
			s = (o * dim + dim - 1 - jj) * inner + j;
		}
		c->src = in + s * elem;
		c->kind = shape_src_kind(c->src, in, in_end) | (inner == 1 ? SC_REV : 0);
	}

	__device__ void slow(uint64_t i0, uint32_t count) const
	{
		for (uint32_t t = 0; t < count; t++)
			shape_move(out + (i0 + t) * elem, in + source(i0 + t) * elem, elem);
	}
};

extern "C" __global__ void SHAPE_BOUNDS(3)
flip(uint8_t *out, const uint8_t *in, unsigned long long outer, unsigned long long dim, unsigned long long inner,
     unsigned long long elem)
{
	shape_flip_op op;
	op.init(out, in, outer, dim, inner, elem);
	shape_chunks(op);
}

/* ---- cumsum ----------------------------------------------------------------------------------- */


/* One lane, sequential along dim from the first element (as the CPU body); the loads of the
 * next SHAPE_SCAN_AHEAD steps are issued together, the adds stay in order. */
static __device__ void shape_scan_f64(uint8_t *out, const uint8_t *in, uint64_t base, uint64_t dim, uint64_t inner)
{
	double acc = 0;
	for (uint64_t t0 = 0; t0 < dim; t0 += SHAPE_SCAN_AHEAD) {
		double v[SHAPE_SCAN_AHEAD];
#pragma unroll
		for (int u = 0; u < SHAPE_SCAN_AHEAD; u++)
			v[u] = t0 + u < dim ? *(const double *)(in + (base + (t0 + u) * inner) * 8) : 0;
#pragma unroll
		for (int u = 0; u < SHAPE_SCAN_AHEAD; u++) {
			if (t0 + u >= dim)
				break;
			acc = t0 + u ? __dadd_rn(acc, v[u]) : v[u];
			*(double *)(out + (base + (t0 + u) * inner) * 8) = acc;
		}
	}
}

/* f32, f16, bf16: f32 sums, narrowed once per stored element. */
static __device__ void shape_scan_f32(uint8_t *out, const uint8_t *in, uint64_t base, uint64_t dim, uint64_t inner,
				      uint32_t dt)
{
	const uint32_t elem = dt == 0 ? 4 : 2;
	float acc = 0;
	for (uint64_t t0 = 0; t0 < dim; t0 += SHAPE_SCAN_AHEAD) {
		float v[SHAPE_SCAN_AHEAD];
#pragma unroll
		for (int u = 0; u < SHAPE_SCAN_AHEAD; u++)
			v[u] = t0 + u < dim ? shape_load_f(in + (base + (t0 + u) * inner) * elem, dt) : 0.0f;
#pragma unroll
		for (int u = 0; u < SHAPE_SCAN_AHEAD; u++) {
			if (t0 + u >= dim)
				break;
			acc = t0 + u ? xpu_add(acc, v[u]) : v[u];
			shape_store_f(out + (base + (t0 + u) * inner) * elem, dt, acc);
		}
	}
}

extern "C" __global__ void SHAPE_BOUNDS(SHAPE_SCAN_BLOCKS)
cumsum(uint8_t *out, const uint8_t *in, unsigned long long outer, unsigned long long dim, unsigned long long inner,
       unsigned int dt)
{
	const uint64_t lane = shape_item();
	if (lane >= outer * inner)
		return;
	uint64_t i;
	const uint64_t base = shape_div(lane, inner, &i) * dim * inner + i;
	if (dt == 1)
		shape_scan_f64(out, in, base, dim, inner);
	else
		shape_scan_f32(out, in, base, dim, inner, dt);
}


/* cumsum_vec4: four neighbouring lanes a thread (f32 whose inner extent is a multiple of 4: the
 * launcher's variant, on a quarter of cumsum's grid), each column added in the scalar order; a
 * step's four lanes are one 16-byte load and store where both bases are on 16 bytes, else (or
 * where inner is not a multiple of 4, launched straight) the four lanes go one by one. Vulkan's cumsum_vec4 gained its 10 points from the wider loads
 * (docs/PERF.md, "Vulkan cumsum_vec4"). */
extern "C" __global__ void SHAPE_BOUNDS(SHAPE_SCAN_BLOCKS)
cumsum_vec4(uint8_t *out, const uint8_t *in, unsigned long long outer, unsigned long long dim,
	    unsigned long long inner, unsigned int dt)
{
	const uint64_t lane = shape_item() * 4;
	if (lane >= outer * inner)
		return;
	uint64_t i;
	if (inner % 4 || ((uintptr_t)out | (uintptr_t)in) % 16) { /* lanes that may span outer blocks */
		for (uint64_t l = lane; l < lane + 4 && l < outer * inner; l++)
			shape_scan_f32(out, in, shape_div(l, inner, &i) * dim * inner + i, dim, inner, 0);
		return;
	}
	const uint64_t base = shape_div(lane, inner, &i) * dim * inner + i;
	const float4 *src = (const float4 *)in + base / 4;
	float4 *dst = (float4 *)out + base / 4, acc = make_float4(0, 0, 0, 0);
	const uint64_t step = inner / 4;
	for (uint64_t t0 = 0; t0 < dim; t0 += SHAPE_SCAN4_AHEAD) {
		float4 v[SHAPE_SCAN4_AHEAD];
#pragma unroll
		for (int u = 0; u < SHAPE_SCAN4_AHEAD; u++)
			if (t0 + u < dim)
				v[u] = src[(t0 + u) * step];
#pragma unroll
		for (int u = 0; u < SHAPE_SCAN4_AHEAD; u++) {
			if (t0 + u >= dim)
				break;
			if (t0 + u) {
				acc.x = xpu_add(acc.x, v[u].x);
				acc.y = xpu_add(acc.y, v[u].y);
				acc.z = xpu_add(acc.z, v[u].z);
				acc.w = xpu_add(acc.w, v[u].w);
			} else {
				acc = v[u];
			}
			dst[(t0 + u) * step] = acc;
		}
	}
}

/* ---- triu, tril ------------------------------------------------------------------------------ */

/* Each row is a zero run, a kept run and a zero run: chunks inside one of them are a 16-byte
 * fill (nothing read) or a copy; the chunk across the diagonal goes element by element.
 * len: cols. */
struct shape_tri_op : shape_plain {
	uint8_t *out;
	const uint8_t *in;
	uint64_t n, rows, len;
	int64_t diag;
	uint32_t elem;
	bool upper, al;
	uint4 fill;

	__device__ void init(uint8_t *o, const uint8_t *i, uint64_t batch, uint64_t r, uint64_t c, int64_t dg,
			     uint64_t el, bool up)
	{
		out = o;
		in = i;
		rows = r;
		len = c;
		n = batch * r * c;
		diag = dg;
		elem = (uint32_t)el;
		upper = up;
		al = shape_al16(out) && shape_al16(in);
		fill = make_uint4(0, 0, 0, 0);
	}

	/* Matrix row r keeps columns [*c0, *c1): triu c >= r + diag, tril c <= r + diag (the CPU
	 * body's kept_columns). */
	__device__ void kept(uint64_t r, uint64_t *c0, uint64_t *c1) const
	{
		const int64_t edge = (int64_t)r + diag;
		if (upper) {
			*c0 = edge <= 0 ? 0 : (uint64_t)edge < len ? (uint64_t)edge : len;
			*c1 = len;
		} else {
			*c0 = 0;
			*c1 = edge < 0 ? 0 : (uint64_t)edge + 1 < len ? (uint64_t)edge + 1 : len;
		}
	}

	__device__ void plan(uint64_t i0, uint64_t row, uint64_t col, uint32_t per, shape_chunk *c) const
	{
		uint64_t k0, k1, r;
		c->kind = SC_SLOW;
		if (!al || col + per > len)
			return;
		shape_div(row, rows, &r);
		kept(r, &k0, &k1);
		c->src = in + i0 * elem;
		if (col >= k0 && col + per <= k1)
			c->kind = SC_COPY;
		else if (col + per <= k0 || col >= k1)
			c->kind = SC_FILL;
	}

	__device__ void slow(uint64_t i0, uint32_t count) const
	{
		for (uint32_t t = 0; t < count; t++) {
			uint64_t k0, k1, col, r;
			const uint64_t e = i0 + t;
			shape_div(shape_div(e, len, &col), rows, &r);
			kept(r, &k0, &k1);
			if (col >= k0 && col < k1)
				shape_move(out + e * elem, in + e * elem, elem);
			else
				shape_store_bits(out + e * elem, 0, elem);
		}
	}
};

extern "C" __global__ void SHAPE_BOUNDS(4)
triu(uint8_t *out, const uint8_t *in, unsigned long long batch, unsigned long long rows, unsigned long long cols,
     long long diagonal, unsigned long long elem)
{
	shape_tri_op op;
	op.init(out, in, batch, rows, cols, diagonal, elem, true);
	shape_chunks(op);
}

extern "C" __global__ void SHAPE_BOUNDS(4)
tril(uint8_t *out, const uint8_t *in, unsigned long long batch, unsigned long long rows, unsigned long long cols,
     long long diagonal, unsigned long long elem)
{
	shape_tri_op op;
	op.init(out, in, batch, rows, cols, diagonal, elem, false);
	shape_chunks(op);
}

/* ---- item walks: pad, pad_backward, flip, triu, tril on rows that are not whole chunks ------------
 * Kernels of their own (pad_items ... tril_items; src/ops/shape/launch.c takes them where a
 * row is not a whole number of 16-byte chunks or a base is off 16 bytes, and the device has
 * them; triu_items and tril_items for every shape). roll is such a walk itself. Each thread moves its 16 items (item u * 256 + t of the group's 4096, so a warp's
 * loads and stores are runs of 32 elements) one element at a time, a batch of them loaded
 * before any is stored, its place found by a cursor that steps with adds; in 32 bits wherever
 * the operands' items are below 2^32, since an item has a budget of some 60 instructions at
 * the copy's rate for four-byte elements. The chunk walk on such rows planned most chunks as
 * two loads and a shift and moved those across two rows element by element after the rest,
 * each load waiting on the store before it. H200, 1 GiB f32, rows of 1023, % of the copy
 * beside each op, in chunks / here: pad 45 / 82-83, pad_backward 17-18 / 53-54, flip 61 / 89-90,
 * triu and tril 79-81 / 119-121 (a dropped element is read by neither; bytes_moved counts it)
 * (docs/PERF.md, "Rows that are not whole chunks"). In the plain kernels themselves, the item
 * walks' code cost the chunk walks 10 % (triu at rows of 1024) and short whole rows ran slower
 * item by item than in chunks (pad at rows of 64: 44 % against 68 %), hence kernels of their
 * own. */

static_assert(XPU_SHAPE_GRAIN % SHAPE_ITEM_BATCH == 0 && XPU_SHAPE_GRAIN % SHAPE_PAD_ITEM_BATCH == 0 &&
		      XPU_SHAPE_GRAIN % SHAPE_PBW_ITEM_BATCH == 0,
	      "whole batches");
/* pad's and pad_backward's row table: a group's 4096 items span at most this many rows
 * wherever the rows hold 17 items or more; a group that spans more works out each item's row
 * on its own. */
#define SHAPE_ITEM_ROWS 256

/* A thread's item e0 + u * 256 as (o, j, i) of a [*, dim, inner] index: the first decoded
 * with divisions, each next one reached by adding the step digit by digit with carries. */
template <typename I>
struct shape_cursor3 {
	I o, j, i, so, sj, si, dim, inner;

	__device__ void init(uint64_t e, uint64_t d, uint64_t in)
	{
		uint64_t x, y, z, w;
		dim = (I)d;
		inner = (I)in;
		o = (I)shape_div(shape_div(e, in, &x), d, &y);
		so = (I)shape_div(shape_div(SHAPE_BLOCK, in, &z), d, &w);
		i = (I)x;
		j = (I)y;
		si = (I)z;
		sj = (I)w;
	}
	__device__ void step()
	{
		i += si;
		const I ci = i >= inner;
		i -= ci * inner;
		j += sj + ci;
		const I cj = j >= dim;
		j -= cj * dim;
		o += so + cj;
	}
};

/* The thread's first item. */
static __device__ __forceinline__ uint64_t shape_item0(void)
{
	return (uint64_t)xpu_group() * SHAPE_BLOCK * XPU_SHAPE_GRAIN + xpu_thread();
}

/* Whether item u of a thread whose first is e0 lies below n. */
template <typename I>
static __device__ __forceinline__ bool shape_item_in(I e0, int u, I n)
{
	return e0 + (I)u * SHAPE_BLOCK < n;
}

/* Items below this take 32-bit indices: a thread's last item (its first plus 15 * 256) must not
 * wrap past 2^32 where it is tested against n. */
#define SHAPE_ITEMS_32 ((1ull << 32) - (uint64_t)SHAPE_BLOCK * XPU_SHAPE_GRAIN)

/* CALL(T, I) with T the element's bits for elem bytes and I the index type (32 bits where
 * every item of the operands, `reach`, is below SHAPE_ITEMS_32). */
#define SHAPE_ITEM_TYPES(elem, reach, CALL)                                                         \
	do {                                                                                        \
		const bool small_ = (reach) < SHAPE_ITEMS_32;                                        \
		switch (elem) {                                                                     \
		case 1: if (small_) CALL(uint8_t, uint32_t); else CALL(uint8_t, uint64_t); break;     \
		case 2: if (small_) CALL(uint16_t, uint32_t); else CALL(uint16_t, uint64_t); break;   \
		case 4: if (small_) CALL(uint32_t, uint32_t); else CALL(uint32_t, uint64_t); break;   \
		default: if (small_) CALL(uint2, uint32_t); else CALL(uint2, uint64_t); break;        \
		}                                                                                   \
	} while (0)

/* A thread's items in batches of BATCH: load(c, here, e, v) sets item e's value v (c: its
 * place, here: whether it is below n; v may stay unset where it is not), every value of a
 * batch loaded before any is stored to out[e]. */
template <int BATCH, typename T, typename I, class Load>
static __device__ __forceinline__ void shape_items_walk(T *out, I e0, I n, shape_cursor3<I> &c, const Load &load)
{
#pragma unroll 1
	for (int u0 = 0; u0 < XPU_SHAPE_GRAIN; u0 += BATCH) {
		T v[BATCH];
#pragma unroll
		for (int u = 0; u < BATCH; u++) {
			load(c, shape_item_in(e0, u0 + u, n), e0 + (I)(u0 + u) * SHAPE_BLOCK, v[u]);
			c.step();
		}
#pragma unroll
		for (int u = 0; u < BATCH; u++)
			if (shape_item_in(e0, u0 + u, n))
				out[e0 + (I)(u0 + u) * SHAPE_BLOCK] = v[u];
	}
}

/* The thread's first item (*e0) and a cursor on it over [*, dim, inner]; false where the
 * thread has no item below n. */
template <typename I>
static __device__ __forceinline__ bool shape_items_begin(I n, uint64_t dim, uint64_t inner, I *e0, shape_cursor3<I> *c)
{
	*e0 = (I)shape_item0();
	if (*e0 >= n)
		return false;
	c->init(*e0, dim, inner);
	return true;
}

/* flip: out[o, j, i] = in[o, dim - 1 - j, i]. */
template <typename T, typename I>
static __device__ __forceinline__ void shape_flip_items(T *__restrict__ out, const T *__restrict__ in, I n, I dim,
							I inner)
{
	I e0;
	shape_cursor3<I> c;
	if (!shape_items_begin(n, dim, inner, &e0, &c))
		return;
	shape_items_walk<SHAPE_ITEM_BATCH>(out, e0, n, c, [&](const shape_cursor3<I> &p, bool here, I, T &v) {
		if (here)
			v = in[(p.o * dim + dim - 1 - p.j) * inner + p.i];
	});
}

extern "C" __global__ void SHAPE_BOUNDS(3)
flip_items(uint8_t *out, const uint8_t *in, unsigned long long outer, unsigned long long dim, unsigned long long inner,
	   unsigned long long elem)
{
	const uint64_t n = outer * dim * inner;
#define FLIP(T, I) shape_flip_items<T, I>((T *)out, (const T *)in, (I)n, (I)dim, (I)inner)
	SHAPE_ITEM_TYPES(elem, n, FLIP);
#undef FLIP
}

/* roll: out[o, j] = in[o, (j - shift) mod dim] along the flattened [outer, dim * inner], shift
 * folded into [0, dim) by the launcher: an item walk, its cursor (row, column) in 32 bits where
 * the items allow (its batch and blocks, and what they measured: shape_tuning.cuh). */
template <typename T, typename I>
static __device__ __forceinline__ void shape_roll_walk(T *__restrict__ out, const T *__restrict__ in, I n, I dim,
						       I shift)
{
	I e0;
	shape_cursor3<I> c; /* (row, column, 0) */
	if (!shape_items_begin(n, dim, 1, &e0, &c))
		return;
	const I back = dim - shift; /* shift in [0, dim) */
	shape_items_walk<SHAPE_ROLL_BATCH>(out, e0, n, c, [&](const shape_cursor3<I> &p, bool here, I, T &v) {
		if (here)
			v = in[p.o * dim + (p.j >= shift ? p.j - shift : p.j + back)];
	});
}

extern "C" __global__ void SHAPE_BOUNDS(SHAPE_ROLL_BLOCKS)
roll(uint8_t *out, const uint8_t *in, unsigned long long outer, unsigned long long dim, unsigned long long inner,
     unsigned long long shift, unsigned long long elem)
{
	const uint64_t n = outer * dim * inner, d = dim * inner, s = shift * inner;
#define ROLL(T, I) shape_roll_walk<T, I>((T *)out, (const T *)in, (I)n, (I)d, (I)s)
	SHAPE_ITEM_TYPES(elem, n, ROLL);
#undef ROLL
}

/* triu / tril: a dropped element reads nothing. The launcher takes these for every shape where
 * built, whole rows too: H200, 1 GiB f32, 1024 x 1024 matrices, 117-119 % of the copy beside
 * them by bytes_moved against the chunk walk's 94-95 % (docs/PERF.md, "Triangles item by item"). */
template <typename T, typename I>
static __device__ __forceinline__ void shape_tri_items(T *__restrict__ out, const T *__restrict__ in, I n, I rows,
						       I cols, int64_t diag, bool upper)
{
	I e0;
	shape_cursor3<I> c; /* (matrix, row, column) */
	if (!shape_items_begin(n, rows, cols, &e0, &c))
		return;
	shape_items_walk<SHAPE_ITEM_BATCH>(out, e0, n, c, [&](const shape_cursor3<I> &p, bool here, I e, T &v) {
		const int64_t off = (int64_t)p.i - (int64_t)p.j; /* column less row, against the diagonal */
		v = T{};
		if (here && (upper ? off >= diag : off <= diag))
			v = in[e];
	});
}

static __device__ __forceinline__ void shape_tri_items_of(uint8_t *out, const uint8_t *in, uint64_t batch, uint64_t rows,
							  uint64_t cols, int64_t diagonal, uint64_t elem, bool upper)
{
	const uint64_t n = batch * rows * cols;
#define TRI(T, I) shape_tri_items<T, I>((T *)out, (const T *)in, (I)n, (I)rows, (I)cols, diagonal, upper)
	SHAPE_ITEM_TYPES(elem, n, TRI);
#undef TRI
}

extern "C" __global__ void SHAPE_BOUNDS(4)
triu_items(uint8_t *out, const uint8_t *in, unsigned long long batch, unsigned long long rows, unsigned long long cols,
	   long long diagonal, unsigned long long elem)
{
	shape_tri_items_of(out, in, batch, rows, cols, diagonal, elem, true);
}

extern "C" __global__ void SHAPE_BOUNDS(4)
tril_items(uint8_t *out, const uint8_t *in, unsigned long long batch, unsigned long long rows, unsigned long long cols,
	   long long diagonal, unsigned long long elem)
{
	shape_tri_items_of(out, in, batch, rows, cols, diagonal, elem, false);
}

/* Fills table with op.row_entry of the output rows the group's items touch, from the group's
 * first (*first); false where they are more than the table holds (or the group is past n).
 * Every thread of the block calls it (a barrier) before any returns. */
template <class Op>
static __device__ __forceinline__ bool shape_item_table(const Op &op, int64_t *table, uint64_t *first)
{
	const uint64_t g0 = (uint64_t)xpu_group() * SHAPE_BLOCK * XPU_SHAPE_GRAIN;
	if (g0 >= op.n)
		return false;
	const uint64_t last = op.n - g0 > SHAPE_BLOCK * XPU_SHAPE_GRAIN ? g0 + SHAPE_BLOCK * XPU_SHAPE_GRAIN - 1 : op.n - 1;
	uint64_t rem;
	*first = shape_div(g0, op.len, &rem); /* 64-bit division costs some 70 instructions: 32 here */
	const uint64_t span = shape_div(last, op.len, &rem) - *first + 1;
	if (span > SHAPE_ITEM_ROWS)
		return false;
	for (uint32_t r = xpu_thread(); r < span; r += SHAPE_BLOCK)
		table[r] = op.row_entry(*first + r);
	__syncthreads();
	return true;
}

/* pad: an item reads the input element its coordinates map to (its row's from the table), or
 * is the fill. Rows of 16 items or fewer: each item on its own (op.slow). */
template <typename T, typename I>
static __device__ __forceinline__ void shape_pad_items(const shape_pad_op &op, const int64_t *table, uint64_t first,
						       bool tabled)
{
	const I e0 = (I)shape_item0(), n = (I)op.n;
	if (e0 >= n)
		return;
	if (!tabled) {
		for (int u = 0; u < XPU_SHAPE_GRAIN && shape_item_in(e0, u, n); u++)
			op.slow(e0 + (uint64_t)u * SHAPE_BLOCK, 1);
		return;
	}
	T *out = (T *)op.out;
	const T *in = (const T *)op.in, fill = *(const T *)&op.fill;
	const I lol = (I)op.lol, dl = (I)op.dl, top = (I)first;
	shape_cursor3<I> c; /* (0, output row, column) */
	c.init(e0, ~(I)0, op.len); /* the rows never wrap */
	/* shape_items_walk's loop written out: through it the kernel spilled 228 bytes, against 80 */
#pragma unroll 1
	for (int u0 = 0; u0 < XPU_SHAPE_GRAIN; u0 += SHAPE_PAD_ITEM_BATCH) {
		T v[SHAPE_PAD_ITEM_BATCH];
#pragma unroll
		for (int u = 0; u < SHAPE_PAD_ITEM_BATCH; u++) {
			const int64_t r = shape_item_in(e0, u0 + u, n) ? table[c.j - top] : -1;
			/* the column's input column, or past the row: a constant border */
			const I q = op.mode == 0 ? c.i - lol : (I)shape_pad_from(c.i, lol, dl, op.mode);
			v[u] = fill;
			if (r >= 0 && q < dl)
				v[u] = in[(I)r + q];
			c.step();
		}
#pragma unroll
		for (int u = 0; u < SHAPE_PAD_ITEM_BATCH; u++)
			if (shape_item_in(e0, u0 + u, n))
				out[e0 + (I)(u0 + u) * SHAPE_BLOCK] = v[u];
	}
}

extern "C" __global__ void SHAPE_BOUNDS(SHAPE_PAD_ITEMS_BLOCKS)
pad_items(uint8_t *out, const uint8_t *in, unsigned long long geom, unsigned long long fill, SHAPE_PAD_PARAMS)
{
	const unsigned long long w[12] = { SHAPE_PAD_ARGS };
	__shared__ int64_t table[SHAPE_ITEM_ROWS];
	shape_pad_op op;
	op.init(out, in, geom, fill, w);
	uint64_t first = 0;
	const bool tabled = shape_item_table(op, table, &first);
#define PAD(T, I) shape_pad_items<T, I>(op, table, first, tabled)
	SHAPE_ITEM_TYPES(op.elem, op.n, PAD);
#undef PAD
}

/* pad_backward: an interior column's one term, or a reflected border's two (the left mirror
 * first, as the CPU body's odometer visits them), loaded for a batch before any is stored.
 * An item of more terms (replicate's edge runs, a reflected column with mirrors on both sides,
 * a row with several upstream rows, rows of 16 items or fewer) is left to its bit in the mask
 * returned, which the kernel sums after the rest (op.slow: a call, out where nothing else is
 * live, so it costs the walk no registers). T: the element's bits; DT: the dtype (f32 0, f64 1,
 * f16 2, bf16 3). */
template <typename T, uint32_t DT, typename I>
static __device__ __forceinline__ uint32_t shape_pbw_items(const shape_pad_bwd_op &op, const int64_t *table,
							   uint64_t first, bool tabled)
{
	const I e0 = (I)shape_item0(), n = (I)op.n;
	if (e0 >= n)
		return 0;
	if (!tabled)
		return (1u << XPU_SHAPE_GRAIN) - 1;
	T *out = (T *)op.out;
	const T *up = (const T *)op.up;
	const I len = (I)op.len, lol = (I)op.lol, hil = (I)op.hil, top = (I)first;
	/* columns [lo_edge, hi_edge) have one term; reflect's mirrors are columns 1 .. lol and
	 * len - 1 - hil .. len - 2, replicate's edge runs columns 0 and len - 1 */
	const I lo_edge = op.mode == 1 ? (lol + 1 < len ? lol + 1 : len) : op.mode == 2 && lol ? 1 : 0;
	const I hi_edge = op.mode == 1 ? (hil + 1 < len ? len - 1 - hil : 0) : op.mode == 2 && hil ? len - 1 : len;
	shape_cursor3<I> c; /* (0, gradient row, column) */
	c.init(e0, ~(I)0, op.len); /* the rows never wrap */
	uint32_t slow = 0; /* bit u: item u sums its terms on its own */
#pragma unroll 1
	for (int u0 = 0; u0 < XPU_SHAPE_GRAIN; u0 += SHAPE_PBW_ITEM_BATCH) {
		T a[SHAPE_PBW_ITEM_BATCH], b[SHAPE_PBW_ITEM_BATCH];
		uint32_t two = 0; /* bit u: two terms, a then b */
#pragma unroll
		for (int u = 0; u < SHAPE_PBW_ITEM_BATCH; u++) {
			const bool here = shape_item_in(e0, u0 + u, n);
			const int64_t r = here ? table[c.j - top] : -1;
			const I j = c.i;
			I p0 = j + lol, p1 = p0; /* the terms' columns in the padded row */
			bool more = r < 0, pair = false;
			if (j < lo_edge || j >= hi_edge) {
				const bool left = j >= 1 && j <= lol, right = j + 2 <= len && len - 1 - j <= hil;
				more |= op.mode != 1 || (left && right);
				pair = left || right;
				if (left)
					p0 = lol - j;
				else
					p1 = lol + 2 * (len - 1) - j;
			}
			a[u] = b[u] = 0;
			if (!more)
				a[u] = up[(I)r + p0];
			if (!more && pair)
				b[u] = up[(I)r + p1];
			slow |= (uint32_t)(here && more) << (u0 + u);
			two |= (uint32_t)pair << u;
			c.step();
		}
#pragma unroll
		for (int u = 0; u < SHAPE_PBW_ITEM_BATCH; u++)
			if (shape_item_in(e0, u0 + u, n) && !(slow >> (u0 + u) & 1))
				out[e0 + (I)(u0 + u) * SHAPE_BLOCK] = two >> u & 1 ? (T)shape_sum2(a[u], b[u], DT) : a[u];
	}
	return slow;
}

extern "C" __global__ void SHAPE_BOUNDS(SHAPE_PBW_ITEMS_BLOCKS)
pad_backward_items(uint8_t *grad, const uint8_t *up, unsigned long long geom, SHAPE_PAD_PARAMS)
{
	const unsigned long long w[12] = { SHAPE_PAD_ARGS };
	__shared__ int64_t table[SHAPE_ITEM_ROWS];
	shape_pad_bwd_op op;
	op.init(grad, up, geom, w);
	uint64_t first = 0;
	const bool tabled = shape_item_table(op, table, &first);
	const bool small = (uint64_t)(op.up_end - op.up) < SHAPE_ITEMS_32 * op.elem; /* the upstream's items */
	uint32_t slow; /* bit u: item u sums its terms after the rest */
#define PBW(T, DT) (small ? shape_pbw_items<T, DT, uint32_t>(op, table, first, tabled)                         \
			  : shape_pbw_items<T, DT, uint64_t>(op, table, first, tabled))
	switch (op.dt) {
	case 0: slow = PBW(uint32_t, 0); break;
	case 1: slow = PBW(unsigned long long, 1); break;
	case 2: slow = PBW(uint16_t, 2); break;
	default: slow = PBW(uint16_t, 3); break;
	}
#undef PBW
	for (const uint64_t e0 = shape_item0(); slow; slow &= slow - 1) {
		const uint64_t e = e0 + (uint64_t)(__ffs(slow) - 1) * SHAPE_BLOCK;
		if (e < op.n)
			op.slow(e, 1);
	}
}

/* ---- write_slice, write_slice_rotating ------------------------------------------------------- */

/* What both slab ops (shape_slab_op, shape_ring_rows_op: OP) do element by element, each
 * element's dest from op.dest_of: a loaded chunk's items [i0, i0 + per), or count items of the
 * source from i0. */
template <class OP>
static __device__ __forceinline__ void shape_slab_scatter(const OP &op, uint64_t i0, uint32_t per, uint4 v)
{
	for (uint32_t t = 0; t < per; t++)
		shape_store_bits(op.dest + op.dest_of(i0 + t) * op.elem, shape_lane(v, t, op.elem), op.elem);
}

template <class OP>
static __device__ __forceinline__ void shape_slab_slow(const OP &op, uint64_t i0, uint32_t count)
{
	for (uint32_t t = 0; t < count; t++)
		shape_move(op.dest + op.dest_of(i0 + t) * op.elem, op.src + (i0 + t) * op.elem, op.elem);
}

/* The slab's runs: the last axis, joined by each axis before it while the axis after is whole
 * in dest, so a run is contiguous on both sides (the source is dense). The ring axis neither
 * joins a run nor is joined. Run r's dest row base comes from decoding r over the axes before
 * the run (ka). On the ring axis the slab starts at `start` and wraps modulo `modulus` (axis
 * -1: no ring); a ring on the last axis (ka == axis) wraps inside runs: element by element. */
struct shape_slab_op {
	uint8_t *dest;
	const uint8_t *src;
	const unsigned long long *w; /* dest dims, starts, ends: read with constant indices */
	uint64_t n, run, run0, start, modulus;
	const uint32_t *pos; /* the ring's position (begin()), or none */
	uint32_t elem, mod;
	int r0, rank, axis, ka, ring_axis;
	bool src_al;

	__device__ uint64_t D(int k) const { return k < r0 ? shape_u32(w, k) : 1; }
	__device__ uint64_t S(int k) const { return k < r0 ? shape_u32(w + 4, k) : 0; }
	__device__ uint64_t W(int k) const { return k < r0 ? shape_u32(w + 8, k) - shape_u32(w + 4, k) : 1; }

	/* What the loads need: the slab's size and where the source starts; the ring (axis -1:
	 * none) is read at begin(). */
	__device__ void init(uint8_t *de, const uint8_t *sr, uint64_t geom, const unsigned long long *wp, int ax,
			     const uint32_t *p, uint32_t m)
	{
		dest = de;
		src = sr;
		w = wp;
		ring_axis = ax;
		pos = p;
		mod = m;
		r0 = (int)(geom & 0xff);
		elem = (uint32_t)((geom >> 8) & 0xff);
		rank = r0 > 0 ? r0 : 1; /* a scalar: one axis of one element */
		n = 1;
#pragma unroll
		for (int k = 0; k < 8; k++)
			n *= W(k);
		src_al = shape_al16(src);
	}

	/* What the stores need: the runs, and the ring's start (st, mod: 32-bit, the launcher's
	 * check; axis -1: no ring). */
	__device__ void runs(int ax, uint32_t st, uint32_t mod)
	{
		axis = ax;
		start = st;
		modulus = mod;
		ka = rank - 1;
#pragma unroll
		for (int k = 7; k >= 1; k--)
			if (k == ka && k != axis && k - 1 != axis && W(k) == D(k))
				ka = k - 1;
		uint64_t stride = 1;
		run = 1;
		run0 = 0;
#pragma unroll
		for (int k = 7; k >= 0; k--) {
			if (k >= rank)
				continue;
			if (k >= ka)
				run *= W(k);
			if (k == ka)
				run0 = S(k) * stride; /* the run's start inside its row */
			stride *= D(k);
		}
	}

	/* What the stores need, worked out while the loads are in flight. */
	__device__ void begin()
	{
		runs(ring_axis, pos ? *pos % mod : 0, mod);
	}

	__device__ uint64_t wrap(uint64_t x) const
	{
		const uint64_t p = start + x; /* start < modulus and x < width <= modulus: one wrap at most */
		return p >= modulus ? p - modulus : p;
	}

	/* Dest element where run r starts, less run0. */
	__device__ uint64_t row_base(uint64_t r) const
	{
		uint64_t rem = r, off = 0, stride = 1, x;
#pragma unroll
		for (int k = 7; k >= 0; k--) {
			if (k >= rank)
				continue;
			if (k < ka) {
				rem = shape_digit(rem, W(k), k, &x);
				off += (k == axis ? wrap(x) : S(k) + x) * stride;
			}
			stride *= D(k);
		}
		return off;
	}

	__device__ uint64_t dest_of(uint64_t e) const
	{
		uint64_t x;
		const uint64_t r = shape_div(e, run, &x);
		return row_base(r) + (ka == axis ? wrap(x) : run0 + x);
	}

	/* The loaded chunk of items [i0, i0 + per): one vector where it lies in one run and its
	 * dest is aligned, else its elements one by one (the bytes are already here). */
	__device__ void put(uint64_t i0, uint32_t per, uint4 v) const
	{
		uint64_t x;
		if (ka != axis) {
			const uint64_t r = shape_div(i0, run, &x);
			if (x + per <= run) {
				uint8_t *d = dest + (row_base(r) + run0 + x) * elem;
				if (shape_al16(d))
					shape_st16(d, v);
				else
					for (uint32_t t = 0; t < per; t++)
						shape_store_bits(d + t * elem, shape_lane(v, t, elem), elem);
				return;
			}
		}
		shape_slab_scatter(*this, i0, per, v);
	}

};

/* The source is dense, so a chunk's load needs no index math: the thread's loads go out first,
 * and the dest addresses are worked out while they are in flight (op.begin()). A chunk that is
 * not whole (the slab's end, a misaligned source) takes the walk. OP: shape_slab_op or
 * shape_ring_rows_op. */
template <class OP>
static __device__ __forceinline__ void shape_slab_chunks(OP &op)
{
	const uint32_t elem = op.elem, per = 16 / elem;
	const uint64_t first = xpu_group() * elem * SHAPE_BLOCK + xpu_thread();
	for (uint32_t u0 = 0; u0 < elem; u0 += SHAPE_BATCH) {
		uint4 v[SHAPE_BATCH];
		uint32_t got = 0;
#pragma unroll
		for (int b = 0; b < SHAPE_BATCH; b++) {
			const uint64_t i0 = (first + (uint64_t)(u0 + b) * SHAPE_BLOCK) * per;
			if (u0 + b < elem && op.src_al && i0 + per <= op.n) {
				v[b] = shape_ld16(op.src + i0 * elem);
				got |= 1u << b;
			}
		}
		if (u0 == 0)
			op.begin();
#pragma unroll
		for (int b = 0; b < SHAPE_BATCH; b++) {
			const uint64_t i0 = (first + (uint64_t)(u0 + b) * SHAPE_BLOCK) * per;
			if (got >> b & 1)
				op.put(i0, per, v[b]);
			else if (u0 + b < elem && i0 < op.n)
				shape_slab_slow(op, i0, (uint32_t)(op.n - i0 < per ? op.n - i0 : per));
		}
	}
}

/* write_slice*'s geometry arguments: dest dims, starts, ends, eight u32 each in four u64. */
#define SHAPE_SLAB_PARAMS                                                                                   \
	unsigned long long d01, unsigned long long d23, unsigned long long d45, unsigned long long d67,      \
		unsigned long long s01, unsigned long long s23, unsigned long long s45, unsigned long long s67, \
		unsigned long long e01, unsigned long long e23, unsigned long long e45, unsigned long long e67
#define SHAPE_SLAB_W { d01, d23, d45, d67, s01, s23, s45, s67, e01, e23, e45, e67 }

extern "C" __global__ void SHAPE_BOUNDS(4)
write_slice(uint8_t *dest, const uint8_t *src, unsigned long long geom, SHAPE_SLAB_PARAMS)
{
	const unsigned long long w[12] = SHAPE_SLAB_W;
	shape_slab_op op;
	op.init(dest, src, geom, w, -1, nullptr, 1);
	shape_slab_chunks(op);
}

extern "C" __global__ void SHAPE_BOUNDS(3)
write_slice_rotating(uint8_t *dest, const uint8_t *src, const uint32_t *pos, unsigned long long geom,
		     SHAPE_SLAB_PARAMS)
{
	const unsigned long long w[12] = SHAPE_SLAB_W;
	shape_slab_op op;
	op.init(dest, src, geom, w, (int)((geom >> 16) & 0xff), pos, (uint32_t)(geom >> 32));
	shape_slab_chunks(op);
}

/* ---- write_slice_rotating_rows: a ring of whole rows ------------------------------------------ */

/* The ring's rows are whole dest rows (every axis after the ring whole: rows of I items) and
 * the axes before it make a block of rings, one dest span (the ring axis's extent times I)
 * apart: one-wide axes, then at most one partial axis, then whole ones (a KV cache of any
 * heads, a ring over the outermost axis; src/ops/shape/launch.c's ring_of_rows). Ring o takes
 * source items [o * seg, (o + 1) * seg) (seg = the ring's width times I) as two contiguous
 * runs: from row `start` on, and past the ring's end from its row 0. So an item's dest is a
 * division for its ring (none for one ring) and a compare: a one-token write is latency, and
 * the plain kernel's per-axis decode is on its path. H200, one token into a [32, 4096, 128]
 * f16 cache, a write in a replayed sequence: 3.12-3.13 us through the plain kernel, 1.96
 * through this one (write_slice: 2.65); 1 GiB rings level (docs/PERF.md). */
struct shape_ring_rows_op {
	uint8_t *dest;
	const uint8_t *src;
	uint64_t n, seg, span, head, split, wrap;
	uint32_t elem, pos, mod; /* the ring's position, as loaded, and modulus */
	bool one_ring, src_al;

	/* Everything but the start, while the loads are in flight. */
	__device__ void init(uint8_t *de, const uint8_t *sr, uint64_t geom, const unsigned long long *w)
	{
		const int r0 = (int)(geom & 0xff), axis = (int)((geom >> 16) & 0xff);
		uint64_t rows = 1, stride = 1, base = 0, outer = 1, width = 1, ring = 1;
		dest = de;
		src = sr;
		elem = (uint32_t)((geom >> 8) & 0xff);
#pragma unroll
		for (int k = 7; k >= 0; k--) {
			if (k >= r0)
				continue;
			const uint64_t d = shape_u32(w, k), s = shape_u32(w + 4, k), e = shape_u32(w + 8, k);
			if (k > axis)
				rows *= d;
			if (k == axis) {
				width = e - s;
				ring = d;
			}
			if (k < axis) {
				base += s * stride;
				outer *= e - s;
			}
			stride *= d;
		}
		seg = width * rows;
		span = ring * rows;
		n = outer * seg;
		head = base;
		split = rows; /* times the rows left to the ring's end at begin(), once the start is in */
		wrap = rows;  /* times the modulus at begin() */
		one_ring = outer == 1;
		src_al = shape_al16(src);
	}

	/* The start, once the position is in. */
	__device__ void begin()
	{
		const uint32_t st = pos % mod;
		head += st * split;
		wrap *= mod;
		split *= mod - st;
	}

	__device__ uint64_t dest_of(uint64_t e) const
	{
		uint64_t r = e, o = 0;
		if (!one_ring)
			o = shape_div(e, seg, &r);
		return head + o * span + r - (r < split ? 0 : wrap);
	}

	/* Items [i0, i0 + per): one vector where they lie in one run of one ring and the dest is
	 * aligned, else element by element. */
	__device__ void put(uint64_t i0, uint32_t per, uint4 v) const
	{
		uint64_t r = i0, o = 0;
		if (!one_ring)
			o = shape_div(i0, seg, &r);
		if (r + per <= seg && (r >= split || r + per <= split)) {
			uint8_t *d = dest + (head + o * span + r - (r < split ? 0 : wrap)) * elem;
			if (shape_al16(d)) {
				shape_st16(d, v);
				return;
			}
		}
		shape_slab_scatter(*this, i0, per, v);
	}

};

/* The position is loaded first: the start is on every store's path. */
extern "C" __global__ void SHAPE_BOUNDS(SHAPE_RING_BLOCKS)
write_slice_rotating_rows(uint8_t *dest, const uint8_t *src, const uint32_t *pos, unsigned long long geom,
			  SHAPE_SLAB_PARAMS)
{
	const uint32_t p = *pos;
	const unsigned long long w[12] = SHAPE_SLAB_W;
	shape_ring_rows_op op;
	op.init(dest, src, geom, w);
	op.pos = p;
	op.mod = (uint32_t)(geom >> 32);
	shape_slab_chunks(op);
}

/* ring_copy: write_slice_rotating's one ring of rows whose rows are whole 16-byte words, as
 * stream_copy's grid and loop (base.cu, the same translation unit): source byte b goes to ring
 * byte (start + b) mod (row * modulus), start the position's row (pos % modulus) times the row;
 * the source is at most one ring, so a word wraps once at most. */
extern "C" __global__ void __launch_bounds__(256)
ring_copy(uint8_t *dst, const uint8_t *src, const uint32_t *pos, unsigned long long n, unsigned long long geom)
{
	const uint32_t modulus = (uint32_t)(geom >> 32);
	const uint64_t row = geom & 0xffffffffu, ring = row * modulus / 16, start = (*pos % modulus) * row / 16;
	uint64_t groups = (uint64_t)gridDim.x * gridDim.y * gridDim.z, lo, hi;
	stream_chunk(n, groups, xpu_group(), &lo, &hi);
	const uint4 *s = (const uint4 *)src;
	uint4 *d = (uint4 *)dst;
	const uint64_t v1 = hi / 16, step = blockDim.x * blockDim.y * blockDim.z;
	uint64_t i = lo / 16 + xpu_thread();
	for (; i + 3 * step < v1; i += 4 * step) {
		uint4 v[4];
#pragma unroll
		for (int u = 0; u < 4; u++)
			v[u] = __ldcs(s + i + u * step);
#pragma unroll
		for (int u = 0; u < 4; u++) {
			const uint64_t at = start + i + u * step;
			__stcs(d + (at >= ring ? at - ring : at), v[u]);
		}
	}
	for (; i < v1; i += step) {
		const uint64_t at = start + i;
		__stcs(d + (at >= ring ? at - ring : at), __ldcs(s + i));
	}
}

/* write_slice's block of whole rows (src/ops/shape/launch.c's ring_of_rows about the slab's last
 * partial axis): the same walk with the start from the geometry's high word (no load first) and
 * a modulus no start reaches, so the run never wraps. */
extern "C" __global__ void SHAPE_BOUNDS(3)
write_slice_rows(uint8_t *dest, const uint8_t *src, unsigned long long geom, SHAPE_SLAB_PARAMS)
{
	const unsigned long long w[12] = SHAPE_SLAB_W;
	shape_ring_rows_op op;
	op.init(dest, src, geom, w);
	op.pos = (uint32_t)(geom >> 32);
	op.mod = 0xffffffffu;
	shape_slab_chunks(op);
}

/* ---- contiguize -------------------------------------------------------------------------------- */


#if SHAPE_TILE_ASYNC
/* 16 bytes from global to shared memory, with no register between (cp.async.cg: cached in L2
 * only); each thread's copies are waited for by group, then a barrier shows them to the block. */
static __device__ __forceinline__ void shape_cp16(void *smem, const void *gmem)
{
	const uint32_t s = (uint32_t)__cvta_generic_to_shared(smem);
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
}

static __device__ __forceinline__ void shape_cp_commit(void)
{
	asm volatile("cp.async.commit_group;\n" ::: "memory");
}

/* Wait until at most N of this thread's committed groups are still in flight. */
template <int N>
static __device__ __forceinline__ void shape_cp_wait(void)
{
	asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
#endif

/* A view (element strides, offset) to dense; a scalar is one axis of one element. lo_p, hi_p:
 * the bytes the view reaches (the extent checked them against the buffer). len: the last dim. */
struct shape_contig_op : shape_plain {
	uint8_t *out;
	const uint8_t *in, *lo_p, *hi_p;
	const unsigned long long *dw; /* dims, and strides: read with constant indices */
	const long long *sts;
	uint64_t n, len;
	int64_t offset, stl;
	uint32_t elem;
	int r0, rank;
	bool out_al;
	uint4 fill;

	__device__ uint64_t D(int k) const { return k < r0 ? shape_u32(dw, k) : 1; }
	__device__ int64_t ST(int k) const { return k < r0 ? sts[k] : 1; }

	__device__ void init(uint8_t *o, const uint8_t *i, uint64_t geom, int64_t off, const unsigned long long *dwp,
			     const long long *stp)
	{
		int64_t lo = off, hi = off;
		out = o;
		in = i;
		dw = dwp;
		sts = stp;
		r0 = (int)(geom & 0xff);
		elem = (uint32_t)((geom >> 8) & 0xff);
		offset = off;
		rank = r0 > 0 ? r0 : 1;
		n = 1;
#pragma unroll
		for (int k = 0; k < 8; k++) {
			n *= D(k);
			const int64_t reach = (int64_t)(D(k) - 1) * ST(k); /* launched only when n > 0 */
			lo += reach < 0 ? reach : 0;
			hi += reach > 0 ? reach : 0;
			if (k < rank) { /* the last axis: the last written (k == rank - 1 would index the arguments) */
				len = D(k);
				stl = ST(k);
			}
		}
		lo_p = in + lo * (int64_t)elem;
		hi_p = in + (hi + 1) * (int64_t)elem;
		out_al = shape_al16(out);
		fill = make_uint4(0, 0, 0, 0);
	}

	/* The input element where output row `row` (every axis but the last) starts. */
	__device__ int64_t at_row(uint64_t row) const
	{
		uint64_t rem = row, x;
		int64_t off = offset;
#pragma unroll
		for (int k = 6; k >= 0; k--) {
			if (k >= rank - 1)
				continue;
			rem = shape_digit(rem, D(k), k, &x);
			off += (int64_t)x * ST(k);
		}
		return off;
	}

	/* The input element of output item e. */
	__device__ int64_t at(uint64_t e) const
	{
		uint64_t x;
		const uint64_t row = shape_div(e, len, &x);
		return at_row(row) + (int64_t)x * stl;
	}

	/* With a last-axis stride of 1: a chunk inside one output row is a run of the input. */
	__device__ void plan(uint64_t i0, uint64_t row, uint64_t j, uint32_t per, shape_chunk *c) const
	{
		c->kind = SC_SLOW;
		if (!out_al || j + per > len)
			return;
		c->src = in + (at_row(row) + (int64_t)j) * (int64_t)elem;
		c->kind = shape_src_kind(c->src, lo_p, hi_p);
	}

	__device__ void slow(uint64_t i0, uint32_t count) const
	{
		for (uint32_t t = 0; t < count; t++)
			shape_move(out + (i0 + t) * elem, in + at(i0 + t) * (int64_t)elem, elem);
	}

	/* An axis before the last with stride 1 and more than one element (the transpose's), or -1. */
	__device__ int unit_axis(void) const
	{
		int p = -1;
#pragma unroll
		for (int k = 0; k < 7; k++)
			if (k < rank - 1 && ST(k) == 1 && D(k) > 1)
				p = k;
		return p;
	}

	/* Input and output element of index m over the axes other than p and the last (m = 0 ..
	 * n / (d[p] * len)), at p = 0 and last = 0. */
	__device__ void plane(uint64_t m, int p, int64_t *in0, uint64_t *out0) const
	{
		uint64_t rem = m, ostride = 1, x, o = 0;
		int64_t i = offset;
#pragma unroll
		for (int k = 7; k >= 0; k--) {
			if (k >= rank)
				continue;
			if (k != p && k != rank - 1) {
				rem = shape_digit(rem, D(k), k, &x);
				i += (int64_t)x * ST(k);
				o += x * ostride;
			}
			ostride *= D(k);
		}
		*in0 = i;
		*out0 = o;
	}
};

/* A transpose tile: TA elements along p (the input's contiguous axis) by TB along the last axis
 * (the output's), held as TB rows of PITCH elements (odd in 4-byte words: the column walks of
 * both sides fall in distinct banks). At most 4096 elements, a block's items. */
template <class T>
struct shape_tile {
	static constexpr uint32_t TA = sizeof(T) == 8 ? 32 : 64, TB = 64, V = 16 / sizeof(T);
	static constexpr uint32_t PITCH = TA + (sizeof(T) == 2 ? 2 : 1);
	const uint8_t *in; /* element (a0, b0) of the input; (a, b) is at in + (a + b * stl) * elem */
	uint8_t *out;      /* and of the output; (a, b) is at out + (a * ostp + b) * elem */
	int64_t stl;
	uint64_t ostp, na, nb; /* the tile's valid extents (partial at the edges) */
};

/* Element by element: consecutive threads take consecutive input along p, then consecutive
 * output along the last axis. AHEAD: a thread's loads all issued before the tile is written,
 * for transposes whose steps are off 16 bytes (every tile comes here); the tile's stores
 * through a generic pointer, which may alias the input as far as the compiler knows, held each
 * load until the store before it (H200, 1 GiB f32, rows of 1023: 1288 GB/s, 33 % of the copy
 * beside it). Not AHEAD: the edge tiles of the others, whose registers stay few (a function of
 * many registers called beside shape_tile_vec cost the vector tiles 15 %: the caller saves
 * its own around the call). */
template <class T>
static __device__ __noinline__ void shape_tile_scalar(const shape_tile<T> g, T *tile)
{
	typedef shape_tile<T> G;
	const uint32_t t = xpu_thread();
#pragma unroll
	for (uint32_t k = 0; k < G::TA * G::TB / SHAPE_BLOCK; k++) {
		const uint32_t idx = t + k * SHAPE_BLOCK, a = idx % G::TA, b = idx / G::TA;
		if (a < g.na && b < g.nb)
			tile[b * G::PITCH + a] = *(const T *)(g.in + ((int64_t)a + (int64_t)b * g.stl) * (int64_t)sizeof(T));
	}
	__syncthreads();
#pragma unroll
	for (uint32_t k = 0; k < G::TA * G::TB / SHAPE_BLOCK; k++) {
		const uint32_t idx = t + k * SHAPE_BLOCK, b = idx % G::TB, a = idx / G::TB;
		if (a < g.na && b < g.nb)
			*(T *)(g.out + (a * g.ostp + b) * sizeof(T)) = tile[b * G::PITCH + a];
	}
	__syncthreads(); /* the tile is free for the next */
}

/* shape_tile_scalar with a thread's loads all issued before the tile is written, for
 * transposes whose steps are off 16 bytes (contiguize_tiles_odd, every tile). In
 * shape_tile_scalar the tile's stores, through a generic pointer that may alias the input as
 * far as the compiler knows, hold each load until the store before it (H200, 1 GiB f32, rows
 * of 1023: 1288 GB/s, 33 % of the copy beside it); it keeps the edge tiles of the other
 * transposes, few registers beside shape_tile_vec. */
template <class T>
static __device__ __forceinline__ void shape_tile_ahead(const shape_tile<T> g, T *tile)
{
	typedef shape_tile<T> G;
	constexpr uint32_t K = G::TA * G::TB / SHAPE_BLOCK, BA = SHAPE_BLOCK / G::TA, BB = SHAPE_BLOCK / G::TB;
	const uint32_t t = xpu_thread(), a = t % G::TA, b0 = t / G::TA, b1 = t % G::TB, a1 = t / G::TB;
	T v[K];
	/* load k: (a, b0 + k * BA), BA input rows on from the one before */
	const uint8_t *src = g.in + ((int64_t)a + (int64_t)b0 * g.stl) * (int64_t)sizeof(T);
	const int64_t in_step = (int64_t)BA * g.stl * (int64_t)sizeof(T);
	const uint32_t rows = a < g.na ? (uint32_t)g.nb : 0; /* rows this thread's column holds */
#pragma unroll
	for (uint32_t k = 0; k < K; k++, src += in_step)
		if (b0 + k * BA < rows)
			v[k] = *(const T *)src;
#pragma unroll
	for (uint32_t k = 0; k < K; k++)
		tile[(b0 + k * BA) * G::PITCH + a] = v[k];
	__syncthreads();
	/* store k: (a1 + k * BB, b1) */
#pragma unroll
	for (uint32_t k = 0; k < K; k++)
		v[k] = tile[b1 * G::PITCH + a1 + k * BB];
	uint8_t *dst = g.out + (a1 * g.ostp + b1) * sizeof(T);
	const uint64_t out_step = (uint64_t)BB * g.ostp * sizeof(T);
#pragma unroll
	for (uint32_t k = 0; k < K; k++, dst += out_step)
		if (a1 + k * BB < g.na && b1 < g.nb)
			*(T *)dst = v[k];
	__syncthreads(); /* the tile is free for the next */
}

/* A full tile on 16-byte boundaries: 16-byte loads along p, 16-byte stores along the last
 * axis, V elements each. A warp takes 8 vectors by 4 rows on either side, which with the
 * pitch keeps its shared-memory accesses in distinct banks (4-byte elements; 8-byte ones per
 * half warp). The loads of a thread's vectors are all in flight before any is written. */
template <class T>
static __device__ __noinline__ void shape_tile_vec(const shape_tile<T> g, T *tile)
{
	typedef shape_tile<T> G;
	constexpr uint32_t NV = G::TA * G::TB / G::V / SHAPE_BLOCK, GA = G::TA / G::V / 8, GB = G::TB / G::V / 8;
	const uint32_t t = xpu_thread(), lane = t & 31;
	uint4 v[NV];
#pragma unroll
	for (uint32_t k = 0; k < NV; k++) {
		const uint32_t w = (t + k * SHAPE_BLOCK) >> 5, a = ((lane & 7) + 8 * (w % GA)) * G::V, b = (lane >> 3) + 4 * (w / GA);
		v[k] = shape_ld16<SHAPE_KEEP>(g.in + ((int64_t)a + (int64_t)b * g.stl) * (int64_t)sizeof(T));
	}
#pragma unroll
	for (uint32_t k = 0; k < NV; k++) {
		const uint32_t w = (t + k * SHAPE_BLOCK) >> 5, a = ((lane & 7) + 8 * (w % GA)) * G::V, b = (lane >> 3) + 4 * (w / GA);
#pragma unroll
		for (uint32_t i = 0; i < G::V; i++)
			tile[b * G::PITCH + a + i] = (T)shape_lane(v[k], i, sizeof(T));
	}
	__syncthreads();
#pragma unroll
	for (uint32_t k = 0; k < NV; k++) {
		const uint32_t w = (t + k * SHAPE_BLOCK) >> 5, b = ((lane & 7) + 8 * (w % GB)) * G::V, a = (lane >> 3) + 4 * (w / GB);
		uint4 o = make_uint4(0, 0, 0, 0);
#pragma unroll
		for (uint32_t i = 0; i < G::V; i++)
			shape_lane_set(&o, i, sizeof(T), tile[(b + i) * G::PITCH + a]);
		shape_st16<SHAPE_KEEP>(g.out + (a * g.ostp + b) * sizeof(T), o);
	}
	__syncthreads(); /* the tile is free for the next */
}

#if SHAPE_TILE_ASYNC
/* A full tile on 16-byte boundaries by cp.async: the 16-byte vectors of input row b (along
 * p) to row b of the buffer, vector s at slot s ^ ((b / V) & 7). That swizzle, in place of
 * shape_tile's pitch (which would break the vectors' 16-byte alignment), keeps the column
 * reads of shape_tile_drain in distinct banks (f32 and f64; f16's pairs share a word). */
template <class T>
static __device__ __forceinline__ uint32_t shape_swz(uint32_t s, uint32_t b)
{
	return b * (shape_tile<T>::TA / shape_tile<T>::V) + (s ^ ((b / shape_tile<T>::V) & 7));
}

/* Issue the copies of tile g into buf: a warp takes whole input rows of the tile. */
template <class T>
static __device__ __forceinline__ void shape_tile_fetch(const shape_tile<T> &g, uint4 *buf)
{
	typedef shape_tile<T> G;
	constexpr uint32_t S = G::TA / G::V, NV = G::TA * G::TB / G::V / SHAPE_BLOCK;
	const uint32_t t = xpu_thread();
	constexpr int unroll = SHAPE_TILE_UNROLL;
#pragma unroll(unroll)
	for (uint32_t k = 0; k < NV; k++) {
		const uint32_t idx = t + k * SHAPE_BLOCK, s = idx % S, b = idx / S;
		shape_cp16(buf + shape_swz<T>(s, b), g.in + ((int64_t)(s * G::V) + (int64_t)b * g.stl) * (int64_t)sizeof(T));
	}
}

/* Write out a tile from buf (its copies landed and a barrier passed) to out, output rows
 * ostp apart: as shape_tile_vec's stores, V input rows of one column in a 16-byte vector. */
template <class T>
static __device__ __forceinline__ void shape_tile_drain(uint8_t *out, uint64_t ostp, const uint4 *buf)
{
	typedef shape_tile<T> G;
	constexpr uint32_t NV = G::TA * G::TB / G::V / SHAPE_BLOCK, GB = G::TB / G::V / 8;
	const uint32_t t = xpu_thread(), lane = t & 31;
	const T *tile = (const T *)buf;
	constexpr int unroll = SHAPE_TILE_UNROLL;
#pragma unroll(unroll)
	for (uint32_t k = 0; k < NV; k++) {
		const uint32_t w = (t + k * SHAPE_BLOCK) >> 5, b = ((lane & 7) + 8 * (w % GB)) * G::V, a = (lane >> 3) + 4 * (w / GB);
		uint4 o = make_uint4(0, 0, 0, 0);
#pragma unroll
		for (uint32_t i = 0; i < G::V; i++)
			shape_lane_set(&o, i, sizeof(T), tile[shape_swz<T>(a / G::V, b + i) * G::V + a % G::V]);
		shape_st16<SHAPE_KEEP>(out + (a * ostp + b) * sizeof(T), o);
	}
}
#endif

/* A transpose's geometry: axis p (stride 1) of P elements, output stride ostp; the last axis
 * of Q; tp x tq tiles a plane. */
struct shape_transpose_geom {
	uint64_t P, Q, ostp, tp, tq, tiles;
	bool steps_al; /* both steps on 16 bytes */
};

/* Tile ti of the transpose. */
template <class T>
static __device__ __forceinline__ shape_tile<T> shape_tile_at(const shape_contig_op &op, int p, const shape_transpose_geom &x,
							       uint64_t ti)
{
	typedef shape_tile<T> G;
	uint64_t bq, ap, out0;
	int64_t in0;
	op.plane(shape_div(shape_div(ti, x.tq, &bq), x.tp, &ap), p, &in0, &out0);
	const uint64_t a0 = ap * G::TA, b0 = bq * G::TB;
	shape_tile<T> g;
	g.in = op.in + (in0 + (int64_t)a0 + (int64_t)b0 * op.stl) * (int64_t)sizeof(T);
	g.out = op.out + (out0 + a0 * x.ostp + b0) * sizeof(T);
	g.stl = op.stl;
	g.ostp = x.ostp;
	g.na = x.P - a0 < G::TA ? x.P - a0 : G::TA;
	g.nb = x.Q - b0 < G::TB ? x.Q - b0 : G::TB;
	return g;
}

/* Whether tile g moves as 16-byte vectors: full, and on 16 bytes at both ends. */
template <class T>
static __device__ __forceinline__ bool shape_tile_vec_ok(const shape_transpose_geom &x, const shape_tile<T> &g)
{
	typedef shape_tile<T> G;
	return SHAPE_TILE_VEC && sizeof(T) >= 2 && x.steps_al && g.na == G::TA && g.nb == G::TB && shape_al16(g.in) &&
	       shape_al16(g.out);
}

#if SHAPE_TILE_ASYNC
/* A block's full vector tiles with the next one's copies in flight while the current one is
 * written out: two buffers of `stage` vectors, used in turn. Of the current tile only its
 * output is kept while the next is found. The others (not full, or off 16 bytes: edges)
 * follow through shape_tile_scalar, found again; calling it from the first loop cost that
 * loop its registers (80 a thread at three blocks an SM: 424 bytes spilled, against 24). */
template <class T>
static __device__ void shape_transpose_async(const shape_contig_op &op, int p, const shape_transpose_geom &x, uint4 *bufs,
					     uint32_t stage)
{
	const uint64_t groups = (uint64_t)gridDim.x * gridDim.y * gridDim.z;
	uint64_t ti = xpu_group();
	uint32_t others = 0, s = 0;
	uint8_t *out = nullptr; /* the tile in buffer s, if any */
	for (; ti < x.tiles || out; ti += groups) {
		uint8_t *next = nullptr;
		if (ti < x.tiles) {
			const shape_tile<T> g = shape_tile_at<T>(op, p, x, ti);
			if (shape_tile_vec_ok(x, g)) {
				shape_tile_fetch(g, bufs + (out ? s ^ 1 : s) * stage);
				next = g.out;
			} else {
				others++;
			}
		}
		shape_cp_commit(); /* empty or not, so that wait_group 1 means "all but the newest" */
		if (out) {
			shape_cp_wait<1>();
			__syncthreads();
			shape_tile_drain<T>(out, x.ostp, bufs + s * stage);
			__syncthreads(); /* buffer s is free again */
			s ^= 1;
		}
		out = next;
	}
	if (!others)
		return;
	shape_cp_wait<0>();
	for (ti = xpu_group(); ti < x.tiles; ti += groups) {
		const shape_tile<T> g = shape_tile_at<T>(op, p, x, ti);
		if (!shape_tile_vec_ok(x, g))
			shape_tile_scalar(g, (T *)bufs); /* ends with its own barrier */
	}
}
#endif

/* A block's tiles one at a time, each loaded and written out before the next. */
template <class T, bool AHEAD>
static __device__ __forceinline__ void shape_transpose_loop(const shape_contig_op &op, int p, const shape_transpose_geom &x,
							    T *tile)
{
	const uint64_t groups = (uint64_t)gridDim.x * gridDim.y * gridDim.z;
	for (uint64_t ti = xpu_group(); ti < x.tiles; ti += groups) {
		const shape_tile<T> g = shape_tile_at<T>(op, p, x, ti);
		if constexpr (AHEAD) {
			shape_tile_ahead(g, tile);
		} else {
			if constexpr (SHAPE_TILE_VEC && sizeof(T) >= 2)
				if (shape_tile_vec_ok(x, g)) {
					shape_tile_vec(g, tile);
					continue;
				}
			shape_tile_scalar(g, tile);
		}
	}
}

/* contiguize of a view whose axis p has stride 1 and whose last axis does not (a transpose):
 * tiles through shared memory, read along p and written along the last axis, so both sides
 * move whole rows. The grid has no more blocks than tiles: block g takes tiles g, g + grid, ...
 * Which path a tile takes is the same for the whole block, so the barriers are safe. tile:
 * one tile's buffer, or (SHAPE_TILE_ASYNC, not AHEAD) two of `stage` vectors each. */
template <class T, bool AHEAD>
static __device__ void shape_transpose(const shape_contig_op &op, int p, uint4 *tile, uint32_t stage)
{
	typedef shape_tile<T> G;
	shape_transpose_geom x;
	uint64_t ostride = 1;
	x.P = 1;
	x.ostp = 1;
#pragma unroll
	for (int k = 7; k >= 0; k--) {
		if (k >= op.rank)
			continue;
		if (k == p) {
			x.P = op.D(k);
			x.ostp = ostride;
		}
		ostride *= op.D(k);
	}
	x.Q = op.len;
	x.tp = (x.P + G::TA - 1) / G::TA;
	x.tq = (x.Q + G::TB - 1) / G::TB;
	x.tiles = op.n / (x.P * x.Q) * x.tp * x.tq;
	x.steps_al = (((uint64_t)op.stl * sizeof(T)) & 15) == 0 && ((x.ostp * sizeof(T)) & 15) == 0;
#if SHAPE_TILE_ASYNC
	if constexpr (!AHEAD && sizeof(T) >= 2)
		shape_transpose_async<T>(op, p, x, tile, stage);
	else
#endif
		shape_transpose_loop<T, AHEAD>(op, p, x, (T *)tile);
}

#define SHAPE_CONTIG_PARAMS                                                                                 \
	uint8_t *out, const uint8_t *in, unsigned long long geom, long long offset, unsigned long long d01,        \
		unsigned long long d23, unsigned long long d45, unsigned long long d67, long long st0, long long st1, \
		long long st2, long long st3, long long st4, long long st5, long long st6, long long st7
#define SHAPE_CONTIG_ARGS out, in, geom, offset, d01, d23, d45, d67, st0, st1, st2, st3, st4, st5, st6, st7


/* TILES: the grid has a group for every XPU_SHAPE_TILE_GROUPS tiles of a transpose (the
 * launcher's contiguize_tiles), so a group's setup (the view's geometry over eight axes, about
 * three quarters of a one-tile group's instructions) serves that many tiles; a view that is
 * no transpose then walks its items across the whole grid, element by element (right for any
 * grid; the launcher does not take contiguize_tiles for one). The plain kernel keeps no tiles:
 * the launcher sends every transpose to contiguize_tiles, and one launched on the plain kernel
 * anyway takes the element walk. With the tiles' code and shared memory in it as well, the
 * plain kernel's walks held 80 registers and spilled 192 bytes (`nvcc -Xptxas -v`), and ran
 * 31-34 % slower (SHAPE_CONTIG_BLOCKS). */
template <bool TILES, bool AHEAD = false>
static __device__ __forceinline__ void shape_contiguize(SHAPE_CONTIG_PARAMS)
{
	const unsigned long long w[4] = { d01, d23, d45, d67 };
	const long long st[8] = { st0, st1, st2, st3, st4, st5, st6, st7 };
	shape_contig_op op;
	op.init(out, in, geom, offset, w, st);
	if constexpr (TILES) {
		/* one tile for every element size: the largest is 64 rows of 33 eight-byte elements;
		 * two with cp.async */
		constexpr uint32_t stage = 64 * 33 * 8 / 16;
		__shared__ uint4 tile[(SHAPE_TILE_ASYNC && !AHEAD ? 2 : 1) * stage];
		const int p = op.unit_axis();
		if (op.stl != 1 && p >= 0 && op.len > 1) /* the same for the whole block: its __syncthreads are safe */
			switch (op.elem) {
			case 1: shape_transpose<uint8_t, AHEAD>(op, p, tile, stage); break;
			case 2: shape_transpose<uint16_t, AHEAD>(op, p, tile, stage); break;
			case 4: shape_transpose<uint32_t, AHEAD>(op, p, tile, stage); break;
			default: shape_transpose<uint64_t, AHEAD>(op, p, tile, stage); break;
			}
		else
			for (uint64_t e = (uint64_t)xpu_group() * SHAPE_BLOCK + xpu_thread(); e < op.n;
			     e += (uint64_t)gridDim.x * SHAPE_BLOCK)
				op.slow(e, 1);
	} else if (op.stl == 1) {
		shape_chunks<SHAPE_KEEP>(op);
	} else {
		shape_items(op);
	}
}

extern "C" __global__ void SHAPE_BOUNDS(SHAPE_CONTIG_BLOCKS)
contiguize(SHAPE_CONTIG_PARAMS)
{
	shape_contiguize<false>(SHAPE_CONTIG_ARGS);
}

extern "C" __global__ void SHAPE_BOUNDS(SHAPE_TILES_BLOCKS)
contiguize_tiles(SHAPE_CONTIG_PARAMS)
{
	shape_contiguize<true>(SHAPE_CONTIG_ARGS);
}

/* contiguize_tiles for transposes whose steps are off 16 bytes, so that no tile takes the
 * vector form: every tile through shape_tile_ahead (why a kernel of its own: shape_tuning.cuh,
 * SHAPE_TILES_ODD_BLOCKS). */
extern "C" __global__ void SHAPE_BOUNDS(SHAPE_TILES_ODD_BLOCKS)
contiguize_tiles_odd(SHAPE_CONTIG_PARAMS)
{
	shape_contiguize<true, true>(SHAPE_CONTIG_ARGS);
}
