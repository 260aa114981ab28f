/* shape_scan.cuh — flip, roll, cumsum, triu and tril: a section of shape_ops.cu, the one translation unit of the
 * CUDA shape kernels, which includes the sections in this order. */
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
