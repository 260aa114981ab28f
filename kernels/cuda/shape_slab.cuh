/* shape_slab.cuh — write_slice, write_slice_rotating and write_slice_rotating_rows: a section of shape_ops.cu, the one translation unit of the
 * CUDA shape kernels, which includes the sections in this order. */
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
