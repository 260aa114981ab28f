/* shape_pad.cuh — pad and pad_backward: a section of shape_ops.cu, the one translation unit of the
 * CUDA shape kernels, which includes the sections in this order. */
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
			v[t] = t < total && al ? shape_ld16<SHAPE_KEEP>(p) : make_uint4(0, 0, 0, 0);
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
		shape_st16<SHAPE_KEEP>(grad + ic * elem, r);
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
