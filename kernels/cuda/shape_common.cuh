/* shape_common.cuh — the shape kernels' shared parts: indices, 16-byte vectors, the warp exchange and the chunk walk: a section of shape_ops.cu, the one translation unit of the
 * CUDA shape kernels, which includes the sections in this order. */
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
	/* a thread's chunks find (row, column) from the first one's by adding the step */
	uint64_t j, r_step, row = shape_div(first * per, op.len, &j);
	const uint64_t q_step = shape_div((uint64_t)SHAPE_BLOCK * per, op.len, &r_step);
	uint32_t slow = 0; /* bit u: the thread's chunk u takes the element walk, after all the rest */
#pragma unroll 1 /* one batch's registers at a time */
	for (uint32_t u0 = 0; u0 < elem; u0 += SHAPE_BATCH) {
		int kind[SHAPE_BATCH];
		uint4 x[SHAPE_BATCH], y[SHAPE_BATCH]; /* y: SC_ANY's second vector, else the op's side values */
		uint32_t own = 0;
#pragma unroll
		for (int b = 0; b < SHAPE_BATCH; b++) {
			const uint64_t i0 = (first + (uint64_t)(u0 + b) * SHAPE_BLOCK) * per;
			shape_chunk c;
			c.kind = SC_NONE;
			if (u0 + b < elem && i0 < op.n)
				plan(i0, row, j, per, &c);
			shape_step(&row, &j, q_step, r_step, op.len);
			const int k = c.kind & SC_KIND;
			const uint8_t *a = k == SC_COPY || k == SC_ANY ? shape_floor16(c.src) : nullptr;
			const bool mine = k == SC_ANY; /* a misaligned chunk loads both of its vectors */
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
			x[b] = a ? shape_ld16<SHAPE_KEEP>(a) : fill;
			y[b] = k == SC_ANY ? shape_ld16<SHAPE_KEEP>(a + 16) : make_uint4(0, 0, 0, 0);
			op.side_load(c.kind, c.aux, &y[b]);
			kind[b] = c.kind | (k == SC_ANY ? (int)((uintptr_t)c.src & 15) << 8 : 0);
		}
#pragma unroll
		for (int b = 0; b < SHAPE_BATCH; b++) {
			const uint64_t i0 = g0 + (uint64_t)((u0 + b) * SHAPE_BLOCK + t) * per;
			const int k = kind[b] & SC_KIND;
			if (k >= SC_COPY) {
				const uint4 v = k == SC_ANY ? shape_shift16(x[b], y[b], SC_OFFSET(kind[b])) : x[b];
				shape_st16<SHAPE_KEEP>(op.out + i0 * elem, op.finish(kind[b], v, y[b]));
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
