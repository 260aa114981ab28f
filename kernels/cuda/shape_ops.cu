/* shape_ops.cu — CUDA bodies of the shape kernels (kernels/table_shape.c), the same names,
 * arguments and results as kernels/cpu/shape_ops.c. A block of 256 threads covers 256 *
 * XPU_SHAPE_GRAIN = 4096 items (output elements; write_slice*: source elements), except
 * cumsum: 256 lanes, one a thread.
 *
 * The byte movers cut a block's items into chunks of 16 bytes (16 / elem items): thread t takes
 * chunks t, t + 256, ... (elem of them), so a warp's chunks are adjacent. A chunk whose items
 * come from one contiguous run of the source moves as one 16-byte vector (two aligned loads
 * shifted together where the source is not 16-aligned); a chunk of a constant border or a
 * dropped triangle is a 16-byte fill. Every other chunk (a run's edge, a misaligned output, a
 * reflected border) takes the element walk, which decodes each item on its own. A thread issues
 * the loads of up to four chunks (64 bytes) before their stores, so they are in flight at once.
 *
 * The typed kernels add in the CPU bodies' order, so both backends give the same bytes on
 * finite values. Uses xpu_cuda.cuh and kernels/shape_grain.h. */
#include "xpu_cuda.cuh"
#include "../shape_grain.h"

#define SHAPE_BLOCK 256
#define SHAPE_BATCH 4 /* chunks whose loads a thread issues before their stores */
/* At most 80 registers: three blocks an SM, 48 KiB of a thread's 64-byte batches in flight on it
 * (left alone, the element walks take up to 120 and leave two). What still spills is around the
 * 64-bit division calls, which only indices past 2^32 reach. */
#define SHAPE_BOUNDS __launch_bounds__(SHAPE_BLOCK, 3)

static_assert(XPU_SHAPE_GRAIN == 16, "a thread's 16 items are elem chunks of 16 bytes each");

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

/* ---- 16-byte vectors ------------------------------------------------------------------------- */

static __device__ __forceinline__ bool shape_al16(const void *p)
{
	return ((uintptr_t)p & 15) == 0;
}

static __device__ __forceinline__ uint4 shape_ld16(const uint8_t *p)
{
	return *(const uint4 *)p;
}

static __device__ __forceinline__ void shape_st16(uint8_t *p, uint4 v)
{
	*(uint4 *)p = v;
}

/* The low word of (hi:lo) >> b, b < 32. */
static __device__ __forceinline__ uint32_t shape_shr(uint32_t lo, uint32_t hi, uint32_t b)
{
	return b ? (lo >> b) | (hi << (32 - b)) : lo;
}

/* The 16 bytes at p, any alignment: the two aligned vectors that hold them (both inside the
 * source: shape_window), shifted into place. Neighbouring threads read the same vectors, so
 * DRAM sees each byte once. */
static __device__ __forceinline__ uint4 shape_ld16_any(const uint8_t *p)
{
	const uint8_t *a = (const uint8_t *)((uintptr_t)p & ~(uintptr_t)15);
	const uint32_t s = (uint32_t)(p - a), q = s >> 2, b = (s & 3) * 8;
	const uint4 x = shape_ld16(a), y = shape_ld16(a + 16);
	/* words q .. q + 4 of the 32 bytes x:y, picked without an indexed (local) array */
	const uint32_t w0 = q == 0 ? x.x : q == 1 ? x.y : q == 2 ? x.z : x.w;
	const uint32_t w1 = q == 0 ? x.y : q == 1 ? x.z : q == 2 ? x.w : y.x;
	const uint32_t w2 = q == 0 ? x.z : q == 1 ? x.w : q == 2 ? y.x : y.y;
	const uint32_t w3 = q == 0 ? x.w : q == 1 ? y.x : q == 2 ? y.y : y.z;
	const uint32_t w4 = q == 0 ? y.x : q == 1 ? y.y : q == 2 ? y.z : y.w;
	return make_uint4(shape_shr(w0, w1, b), shape_shr(w1, w2, b), shape_shr(w2, w3, b), shape_shr(w3, w4, b));
}

/* Whether the aligned 32 bytes shape_ld16_any reads for p lie inside [lo, hi). */
static __device__ __forceinline__ bool shape_window(const uint8_t *p, const uint8_t *lo, const uint8_t *hi)
{
	const uint8_t *a = (const uint8_t *)((uintptr_t)p & ~(uintptr_t)15);
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

/* ---- the chunk walk ------------------------------------------------------------------------- */

/* How a chunk moves: nothing (past the end), element by element, one aligned vector, two
 * vectors shifted (shape_ld16_any), or the op's fill; SC_REV reverses the loaded elements. */
enum { SC_NONE, SC_SLOW, SC_COPY, SC_ANY, SC_FILL, SC_KIND = 7, SC_REV = 8 };

struct shape_chunk {
	const uint8_t *src;
	uint8_t *dst;
	int kind;
};

/* How an aligned-destination chunk reads the 16 source bytes at p, the source being [lo, hi). */
static __device__ __forceinline__ int shape_src_kind(const uint8_t *p, const uint8_t *lo, const uint8_t *hi)
{
	return shape_al16(p) ? SC_COPY : shape_window(p, lo, hi) ? SC_ANY : SC_SLOW;
}

/* Runs an op over the thread's chunks. The op gives n (items), elem, fill (16 bytes),
 * plan(i0, per, &chunk) for the chunk of items [i0, i0 + per), and slow(i0, count), the element
 * walk. Each chunk's load is issued as soon as it is planned, every store after the last
 * load; slow chunks go last. */
template <class Op>
static __device__ __forceinline__ void shape_chunks(const Op &op)
{
	const uint32_t elem = op.elem, per = 16 / elem;
	const uint64_t first = xpu_group() * elem * SHAPE_BLOCK + xpu_thread();
	for (uint32_t u0 = 0; u0 < elem; u0 += SHAPE_BATCH) {
		shape_chunk c[SHAPE_BATCH];
		uint4 v[SHAPE_BATCH];
		uint32_t slow = 0;
#pragma unroll
		for (int b = 0; b < SHAPE_BATCH; b++) {
			const uint64_t i0 = (first + (uint64_t)(u0 + b) * SHAPE_BLOCK) * per;
			c[b].kind = SC_NONE;
			if (u0 + b < elem && i0 < op.n)
				op.plan(i0, per, &c[b]);
			const int k = c[b].kind & SC_KIND;
			slow |= (k == SC_SLOW) << b;
			v[b] = k == SC_COPY ? shape_ld16(c[b].src) : k == SC_ANY ? shape_ld16_any(c[b].src) : op.fill;
		}
#pragma unroll
		for (int b = 0; b < SHAPE_BATCH; b++)
			if ((c[b].kind & SC_KIND) >= SC_COPY)
				shape_st16(c[b].dst, c[b].kind & SC_REV ? shape_rev16(v[b], elem) : v[b]);
		for (; slow; slow &= slow - 1) {
			const uint64_t i0 = (first + (uint64_t)(u0 + __ffs(slow) - 1) * SHAPE_BLOCK) * per;
			op.slow(i0, (uint32_t)(op.n - i0 < per ? op.n - i0 : per));
		}
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

/* dl, lol, odl: the last axis's dim, before and padded dim. */
struct shape_pad_op : shape_pad_geo {
	uint8_t *out;
	const uint8_t *in, *in_end;
	uint64_t n, fill_bits, dl, lol, odl;
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
			if (k == rank - 1) {
				dl = D(k);
				lol = LO(k);
				odl = OD(k);
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
			rem = shape_div(rem, OD(k), &x);
			const int64_t q = shape_pad_from(x, LO(k), D(k), mode);
			if (q < 0)
				return -1;
			src += (uint64_t)q * stride;
			stride *= D(k);
		}
		return (int64_t)src;
	}

	/* A chunk inside one output row: the row's interior copied, a constant border filled. */
	__device__ void plan(uint64_t i0, uint32_t per, shape_chunk *c) const
	{
		uint64_t j;
		const uint64_t row = shape_div(i0, odl, &j);
		c->kind = SC_SLOW;
		if (!out_al || j + per > odl)
			return;
		c->dst = out + i0 * elem;
		const int64_t r = in_row(row);
		if (r < 0) {
			c->kind = SC_FILL;
		} else if (j >= lol && j + per <= lol + dl) {
			c->src = in + ((uint64_t)r * dl + j - lol) * elem;
			c->kind = shape_src_kind(c->src, in, in_end);
		} else if (mode == 0 && (j + per <= lol || j >= lol + dl)) {
			c->kind = SC_FILL;
		}
	}

	__device__ void slow(uint64_t i0, uint32_t count) const
	{
		for (uint32_t t = 0; t < count; t++) {
			uint64_t j;
			const uint64_t e = i0 + t, row = shape_div(e, odl, &j);
			const int64_t r = in_row(row), q = r < 0 ? -1 : shape_pad_from(j, lol, dl, mode);
			if (q < 0)
				shape_store_bits(out + e * elem, fill_bits, elem);
			else
				shape_move(out + e * elem, in + ((uint64_t)r * dl + (uint64_t)q) * elem, elem);
		}
	}
};

extern "C" __global__ void SHAPE_BOUNDS
pad(uint8_t *out, const uint8_t *in, unsigned long long geom, unsigned long long fill, unsigned long long d01,
    unsigned long long d23, unsigned long long d45, unsigned long long d67, unsigned long long b01,
    unsigned long long b23, unsigned long long b45, unsigned long long b67, unsigned long long a01,
    unsigned long long a23, unsigned long long a45, unsigned long long a67)
{
	const unsigned long long w[12] = { d01, d23, d45, d67, b01, b23, b45, b67, a01, a23, a45, a67 };
	shape_pad_op op;
	op.init(out, in, geom, fill, w);
	shape_chunks(op);
}

/* ---- pad_backward ----------------------------------------------------------------------------- */

static __device__ __forceinline__ float shape_load_f(const uint8_t *p, uint32_t dt)
{
	if (dt == 2)
		return xpu_f16(*(const uint16_t *)p);
	if (dt == 3)
		return __uint_as_float((uint32_t)(*(const uint16_t *)p) << 16);
	return *(const float *)p;
}

/* bf16 from f32: round to nearest even; NaN stays a quiet NaN (as the CPU body does). */
static __device__ __forceinline__ uint16_t shape_bf16(float f)
{
	uint32_t u = __float_as_uint(f);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40);
	return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
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
 * is the term, -0 included), so such chunks are byte copies; the rest sum in the CPU's order.
 * dl, lol, hil: the last axis's dim, before and after. */
struct shape_pad_bwd_op : shape_pad_geo {
	uint8_t *grad;
	const uint8_t *up, *up_end;
	uint64_t n, dl, lol, hil;
	uint32_t elem, dt;
	bool out_al;
	uint4 fill;

	__device__ void init(uint8_t *g, const uint8_t *u, uint64_t geom, const unsigned long long *wp)
	{
		uint64_t n_up = 1;
		geo(geom, wp);
		grad = g;
		up = u;
		dt = (uint32_t)((geom >> 8) & 0xff);
		elem = dt == 1 ? 8 : dt == 0 ? 4 : 2;
		n = 1;
#pragma unroll
		for (int k = 0; k < 8; k++) {
			n *= D(k);
			n_up *= OD(k);
			if (k == rank - 1) {
				dl = D(k);
				lol = LO(k);
				hil = HI(k);
			}
		}
		up_end = up + n_up * elem;
		out_al = shape_al16(grad);
		fill = make_uint4(0, 0, 0, 0);
	}

	/* A chunk inside one gradient row whose every element has one upstream position. */
	__device__ void plan(uint64_t i0, uint32_t per, shape_chunk *c) const
	{
		uint64_t j, x, up_row = 0, stride = 1;
		uint64_t rem = shape_div(i0, dl, &j);
		c->kind = SC_SLOW;
		if (!out_al || j + per > dl)
			return;
		for (uint32_t t = 0; t < per; t++)
			if (shape_pre_count(j + t, dl, lol, hil, mode) != 1)
				return;
#pragma unroll
		for (int k = 6; k >= 0; k--) {
			if (k >= rank - 1)
				continue;
			rem = shape_div(rem, D(k), &x);
			if (shape_pre_count(x, D(k), LO(k), HI(k), mode) != 1)
				return;
			up_row += (x + LO(k)) * stride;
			stride *= OD(k);
		}
		c->src = up + (up_row * (dl + lol + hil) + j + lol) * elem;
		c->dst = grad + i0 * elem;
		c->kind = shape_src_kind(c->src, up, up_end);
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
			rem = shape_div(rem, D(k), &x);
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

	/* The sum from the first term (a lone term is copied, -0 included): f32 for f32 and the
	 * halves, narrowed once on store; f64 for f64. */
	__device__ void sum_one(uint64_t e) const
	{
		uint64_t total = 1;
		double acc64 = 0;
		float acc32 = 0;
		for (uint64_t t = 0; t < total; t++) {
			const uint64_t off = term(e, t, &total);
			if (dt == 1) {
				const double v = *(const double *)(up + off * 8);
				acc64 = t ? __dadd_rn(acc64, v) : v;
			} else {
				const float v = shape_load_f(up + off * elem, dt);
				acc32 = t ? xpu_add(acc32, v) : v;
			}
		}
		if (dt == 1)
			*(double *)(grad + e * 8) = acc64;
		else
			shape_store_f(grad + e * elem, dt, acc32);
	}

	__device__ void slow(uint64_t i0, uint32_t count) const
	{
		for (uint32_t t = 0; t < count; t++)
			sum_one(i0 + t);
	}
};

extern "C" __global__ void SHAPE_BOUNDS
pad_backward(uint8_t *grad, const uint8_t *up, unsigned long long geom, unsigned long long d01,
	     unsigned long long d23, unsigned long long d45, unsigned long long d67, unsigned long long b01,
	     unsigned long long b23, unsigned long long b45, unsigned long long b67, unsigned long long a01,
	     unsigned long long a23, unsigned long long a45, unsigned long long a67)
{
	const unsigned long long w[12] = { d01, d23, d45, d67, b01, b23, b45, b67, a01, a23, a45, a67 };
	shape_pad_bwd_op op;
	op.init(grad, up, geom, w);
	shape_chunks(op);
}

/* ---- flip, roll ---------------------------------------------------------------------------------- */

/* out[o, j, i] = in[o, src(j), i]. A roll along (dim, inner) is a roll along the flattened
 * dim * inner by shift * inner, so a roll always has inner == 1: its chunks are runs of a row
 * that stop where the source wraps. A flip with inner == 1 reads its chunk's mirror run and
 * reverses it in registers; with inner > 1 its runs are the inner rows, in order. */
struct shape_reorder_op {
	uint8_t *out;
	const uint8_t *in, *in_end;
	uint64_t n, dim, inner, shift;
	uint32_t elem;
	bool flip, out_al;
	uint4 fill;

	__device__ void init(uint8_t *o, const uint8_t *i, uint64_t outer, uint64_t dm, uint64_t inr, uint64_t sh,
			     uint64_t el, bool fl)
	{
		out = o;
		in = i;
		elem = (uint32_t)el;
		flip = fl;
		n = outer * dm * inr;
		in_end = in + n * elem;
		dim = fl ? dm : dm * inr;
		inner = fl ? inr : 1;
		shift = fl ? 0 : sh * inr;
		out_al = shape_al16(out);
		fill = make_uint4(0, 0, 0, 0);
	}

	/* The source item of output item e. */
	__device__ uint64_t source(uint64_t e) const
	{
		uint64_t i, j;
		const uint64_t o = shape_div(shape_div(e, inner, &i), dim, &j);
		j = flip ? dim - 1 - j : j >= shift ? j - shift : j + dim - shift; /* shift in [0, dim) */
		return (o * dim + j) * inner + i;
	}

	__device__ void plan(uint64_t i0, uint32_t per, shape_chunk *c) const
	{
		uint64_t i, j, s;
		c->kind = SC_SLOW;
		if (!out_al)
			return;
		if (inner == 1) {
			const uint64_t o = shape_div(i0, dim, &j);
			if (j + per > dim)
				return;
			s = flip ? dim - j - per : j >= shift ? j - shift : j + dim - shift;
			if (s + per > dim) /* a roll's chunk that wraps in its source row */
				return;
			s += o * dim;
		} else {
			const uint64_t o = shape_div(shape_div(i0, inner, &i), dim, &j);
			if (i + per > inner)
				return;
			s = (o * dim + dim - 1 - j) * inner + i;
		}
		c->src = in + s * elem;
		c->dst = out + i0 * elem;
		c->kind = shape_src_kind(c->src, in, in_end) | (flip && inner == 1 ? SC_REV : 0);
	}

	__device__ void slow(uint64_t i0, uint32_t count) const
	{
		for (uint32_t t = 0; t < count; t++)
			shape_move(out + (i0 + t) * elem, in + source(i0 + t) * elem, elem);
	}
};

extern "C" __global__ void SHAPE_BOUNDS
flip(uint8_t *out, const uint8_t *in, unsigned long long outer, unsigned long long dim, unsigned long long inner,
     unsigned long long elem)
{
	shape_reorder_op op;
	op.init(out, in, outer, dim, inner, 0, elem, true);
	shape_chunks(op);
}

extern "C" __global__ void SHAPE_BOUNDS
roll(uint8_t *out, const uint8_t *in, unsigned long long outer, unsigned long long dim, unsigned long long inner,
     unsigned long long shift, unsigned long long elem)
{
	shape_reorder_op op;
	op.init(out, in, outer, dim, inner, shift, elem, false);
	shape_chunks(op);
}

/* ---- cumsum ----------------------------------------------------------------------------------- */

#define SHAPE_SCAN_AHEAD 8 /* a lane's loads in flight before their sums are stored */

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

extern "C" __global__ void SHAPE_BOUNDS
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

/* ---- triu, tril ------------------------------------------------------------------------------ */

/* Each row is a zero run, a kept run and a zero run: chunks inside one of them are a 16-byte
 * fill (nothing read) or a copy; the chunk across the diagonal goes element by element. */
struct shape_tri_op {
	uint8_t *out;
	const uint8_t *in;
	uint64_t n, rows, cols;
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
		cols = c;
		n = batch * r * c;
		diag = dg;
		elem = (uint32_t)el;
		upper = up;
		al = shape_al16(out) && shape_al16(in);
		fill = make_uint4(0, 0, 0, 0);
	}

	/* Item e's column; row r keeps [*c0, *c1): triu c >= r + diag, tril c <= r + diag (the CPU
	 * body's kept_columns). */
	__device__ uint64_t place(uint64_t e, uint64_t *c0, uint64_t *c1) const
	{
		uint64_t c, r;
		shape_div(shape_div(e, cols, &c), rows, &r);
		const int64_t edge = (int64_t)r + diag;
		if (upper) {
			*c0 = edge <= 0 ? 0 : (uint64_t)edge < cols ? (uint64_t)edge : cols;
			*c1 = cols;
		} else {
			*c0 = 0;
			*c1 = edge < 0 ? 0 : (uint64_t)edge + 1 < cols ? (uint64_t)edge + 1 : cols;
		}
		return c;
	}

	__device__ void plan(uint64_t i0, uint32_t per, shape_chunk *c) const
	{
		uint64_t k0, k1;
		const uint64_t col = place(i0, &k0, &k1);
		c->kind = SC_SLOW;
		if (!al || col + per > cols)
			return;
		c->dst = out + i0 * elem;
		c->src = in + i0 * elem;
		if (col >= k0 && col + per <= k1)
			c->kind = SC_COPY;
		else if (col + per <= k0 || col >= k1)
			c->kind = SC_FILL;
	}

	__device__ void slow(uint64_t i0, uint32_t count) const
	{
		for (uint32_t t = 0; t < count; t++) {
			uint64_t k0, k1;
			const uint64_t e = i0 + t, col = place(e, &k0, &k1);
			if (col >= k0 && col < k1)
				shape_move(out + e * elem, in + e * elem, elem);
			else
				shape_store_bits(out + e * elem, 0, elem);
		}
	}
};

extern "C" __global__ void SHAPE_BOUNDS
triu(uint8_t *out, const uint8_t *in, unsigned long long batch, unsigned long long rows, unsigned long long cols,
     long long diagonal, unsigned long long elem)
{
	shape_tri_op op;
	op.init(out, in, batch, rows, cols, diagonal, elem, true);
	shape_chunks(op);
}

extern "C" __global__ void SHAPE_BOUNDS
tril(uint8_t *out, const uint8_t *in, unsigned long long batch, unsigned long long rows, unsigned long long cols,
     long long diagonal, unsigned long long elem)
{
	shape_tri_op op;
	op.init(out, in, batch, rows, cols, diagonal, elem, false);
	shape_chunks(op);
}

/* ---- write_slice, write_slice_rotating ------------------------------------------------------- */

/* The slab's runs: the last axis, joined by each axis before it while the axis after is whole
 * in dest, so a run is contiguous on both sides (the source is dense). The ring axis neither
 * joins a run nor is joined. Run r's dest row base comes from decoding r over the axes before
 * the run (ka). On the ring axis the slab starts at `start` and wraps modulo `modulus` (axis
 * -1: no ring); a ring on the last axis (ka == axis) wraps inside runs: element walk only. */
struct shape_slab_op {
	uint8_t *dest;
	const uint8_t *src;
	const unsigned long long *w; /* dest dims, starts, ends: read with constant indices */
	uint64_t n, run, run0, start, modulus;
	uint32_t elem;
	int r0, rank, axis, ka;
	bool src_al;
	uint4 fill;

	__device__ uint64_t D(int k) const { return k < r0 ? shape_u32(w, k) : 1; }
	__device__ uint64_t S(int k) const { return k < r0 ? shape_u32(w + 4, k) : 0; }
	__device__ uint64_t W(int k) const { return k < r0 ? shape_u32(w + 8, k) - shape_u32(w + 4, k) : 1; }

	__device__ void init(uint8_t *de, const uint8_t *sr, uint64_t geom, const unsigned long long *wp, int ax,
			     uint64_t st, uint64_t mod)
	{
		dest = de;
		src = sr;
		w = wp;
		r0 = (int)(geom & 0xff);
		elem = (uint32_t)((geom >> 8) & 0xff);
		rank = r0 > 0 ? r0 : 1; /* a scalar: one axis of one element */
		axis = ax;
		start = st;
		modulus = mod;
		n = 1;
		ka = rank - 1;
#pragma unroll
		for (int k = 7; k >= 0; k--) {
			n *= W(k);
			if (k >= 1 && k == ka && k != axis && k - 1 != axis && W(k) == D(k))
				ka = k - 1;
		}
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
		src_al = shape_al16(src);
		fill = make_uint4(0, 0, 0, 0);
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
				rem = shape_div(rem, W(k), &x);
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

	__device__ void plan(uint64_t i0, uint32_t per, shape_chunk *c) const
	{
		uint64_t x;
		c->kind = SC_SLOW;
		if (!src_al || ka == axis)
			return;
		const uint64_t r = shape_div(i0, run, &x);
		if (x + per > run)
			return;
		c->dst = dest + (row_base(r) + run0 + x) * elem;
		c->src = src + i0 * elem;
		if (shape_al16(c->dst))
			c->kind = SC_COPY;
	}

	__device__ void slow(uint64_t i0, uint32_t count) const
	{
		for (uint32_t t = 0; t < count; t++)
			shape_move(dest + dest_of(i0 + t) * elem, src + (i0 + t) * elem, elem);
	}
};

extern "C" __global__ void SHAPE_BOUNDS
write_slice(uint8_t *dest, const uint8_t *src, unsigned long long geom, unsigned long long d01,
	    unsigned long long d23, unsigned long long d45, unsigned long long d67, unsigned long long s01,
	    unsigned long long s23, unsigned long long s45, unsigned long long s67, unsigned long long e01,
	    unsigned long long e23, unsigned long long e45, unsigned long long e67)
{
	const unsigned long long w[12] = { d01, d23, d45, d67, s01, s23, s45, s67, e01, e23, e45, e67 };
	shape_slab_op op;
	op.init(dest, src, geom, w, -1, 0, 1);
	shape_chunks(op);
}

extern "C" __global__ void SHAPE_BOUNDS
write_slice_rotating(uint8_t *dest, const uint8_t *src, const uint32_t *pos, unsigned long long geom,
		     unsigned long long d01, unsigned long long d23, unsigned long long d45, unsigned long long d67,
		     unsigned long long s01, unsigned long long s23, unsigned long long s45, unsigned long long s67,
		     unsigned long long e01, unsigned long long e23, unsigned long long e45, unsigned long long e67)
{
	const unsigned long long w[12] = { d01, d23, d45, d67, s01, s23, s45, s67, e01, e23, e45, e67 };
	const uint64_t modulus = geom >> 32;
	shape_slab_op op;
	op.init(dest, src, geom, w, (int)((geom >> 16) & 0xff), *pos % modulus, modulus);
	shape_chunks(op);
}

/* ---- contiguize -------------------------------------------------------------------------------- */

#define SHAPE_TILE 64 /* a transpose tile: 64 x 64 elements, the block's 4096 items */

/* A view (element strides, offset) to dense; a scalar is one axis of one element. lo_p, hi_p:
 * the bytes the view reaches (the extent checked them against the buffer). */
struct shape_contig_op {
	uint8_t *out;
	const uint8_t *in, *lo_p, *hi_p;
	const unsigned long long *dw; /* dims, and strides: read with constant indices */
	const long long *sts;
	uint64_t n, dl;
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
			if (k == rank - 1) {
				dl = D(k);
				stl = ST(k);
			}
		}
		lo_p = in + lo * (int64_t)elem;
		hi_p = in + (hi + 1) * (int64_t)elem;
		out_al = shape_al16(out);
		fill = make_uint4(0, 0, 0, 0);
	}

	/* The input element of output item e. */
	__device__ int64_t at(uint64_t e) const
	{
		uint64_t rem = e, x;
		int64_t off = offset;
#pragma unroll
		for (int k = 7; k >= 0; k--) {
			if (k >= rank)
				continue;
			rem = shape_div(rem, D(k), &x);
			off += (int64_t)x * ST(k);
		}
		return off;
	}

	/* With a last-axis stride of 1: a chunk inside one output row is a run of the input. */
	__device__ void plan(uint64_t i0, uint32_t per, shape_chunk *c) const
	{
		uint64_t x;
		shape_div(i0, dl, &x);
		c->kind = SC_SLOW;
		if (!out_al || x + per > dl)
			return;
		c->src = in + at(i0) * (int64_t)elem;
		c->dst = out + i0 * elem;
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
	 * n / (d[p] * dl)), at p = 0 and last = 0. */
	__device__ void plane(uint64_t m, int p, int64_t *in0, uint64_t *out0) const
	{
		uint64_t rem = m, ostride = 1, x, o = 0;
		int64_t i = offset;
#pragma unroll
		for (int k = 7; k >= 0; k--) {
			if (k >= rank)
				continue;
			if (k != p && k != rank - 1) {
				rem = shape_div(rem, D(k), &x);
				i += (int64_t)x * ST(k);
				o += x * ostride;
			}
			ostride *= D(k);
		}
		*in0 = i;
		*out0 = o;
	}
};

/* contiguize of a view whose axis p has stride 1 and whose last axis does not (a transpose):
 * 64 x 64 tiles through shared memory, read along p and written along the last axis, so both
 * sides move whole rows. A tile holds at most a block's 4096 items, so the grid has no more
 * blocks than tiles: block g takes tiles g, g + grid, ... Row pitch 65: conflict-free banks. */
template <class T>
static __device__ void shape_transpose(const shape_contig_op &op, int p, T *tile)
{
	uint64_t P = 1, ostp = 1, ostride = 1;
#pragma unroll
	for (int k = 7; k >= 0; k--) {
		if (k >= op.rank)
			continue;
		if (k == p) {
			P = op.D(k);
			ostp = ostride;
		}
		ostride *= op.D(k);
	}
	const uint64_t Q = op.dl, tp = (P + SHAPE_TILE - 1) / SHAPE_TILE, tq = (Q + SHAPE_TILE - 1) / SHAPE_TILE;
	const uint64_t tiles = op.n / (P * Q) * tp * tq, groups = (uint64_t)gridDim.x * gridDim.y * gridDim.z;
	const uint32_t ta = xpu_thread() % SHAPE_TILE, tb = xpu_thread() / SHAPE_TILE; /* tb: 0 .. 3 */
	for (uint64_t ti = xpu_group(); ti < tiles; ti += groups) {
		uint64_t bq, ap, out0;
		int64_t in0;
		op.plane(shape_div(shape_div(ti, tq, &bq), tp, &ap), p, &in0, &out0);
		const uint64_t a0 = ap * SHAPE_TILE, b0 = bq * SHAPE_TILE;
#pragma unroll
		for (int k = 0; k < SHAPE_TILE / 4; k++) { /* along p: consecutive threads, consecutive input */
			const uint64_t a = a0 + ta, b = b0 + tb + 4 * k;
			if (a < P && b < Q)
				tile[(tb + 4 * k) * (SHAPE_TILE + 1) + ta] =
					*(const T *)(op.in + (in0 + (int64_t)a + (int64_t)b * op.stl) * (int64_t)sizeof(T));
		}
		__syncthreads();
#pragma unroll
		for (int k = 0; k < SHAPE_TILE / 4; k++) { /* along the last axis: consecutive output */
			const uint64_t a = a0 + tb + 4 * k, b = b0 + ta;
			if (a < P && b < Q)
				*(T *)(op.out + (out0 + a * ostp + b) * sizeof(T)) = tile[ta * (SHAPE_TILE + 1) + tb + 4 * k];
		}
		__syncthreads(); /* the tile is free for the next */
	}
}

extern "C" __global__ void SHAPE_BOUNDS
contiguize(uint8_t *out, const uint8_t *in, unsigned long long geom, long long offset, unsigned long long d01,
	   unsigned long long d23, unsigned long long d45, unsigned long long d67, long long st0, long long st1,
	   long long st2, long long st3, long long st4, long long st5, long long st6, long long st7)
{
	__shared__ uint64_t tile[SHAPE_TILE * (SHAPE_TILE + 1)]; /* one for every element size */
	const unsigned long long w[4] = { d01, d23, d45, d67 };
	const long long st[8] = { st0, st1, st2, st3, st4, st5, st6, st7 };
	shape_contig_op op;
	op.init(out, in, geom, offset, w, st);
	const int p = op.unit_axis();
	if (op.stl == 1)
		shape_chunks(op);
	else if (p >= 0 && op.dl > 1) /* the same for the whole block: its __syncthreads are safe */
		switch (op.elem) {
		case 1: shape_transpose(op, p, (uint8_t *)tile); break;
		case 2: shape_transpose(op, p, (uint16_t *)tile); break;
		case 4: shape_transpose(op, p, (uint32_t *)tile); break;
		default: shape_transpose(op, p, tile); break;
		}
	else
		shape_items(op);
}
