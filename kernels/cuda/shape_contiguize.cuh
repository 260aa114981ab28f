/* shape_contiguize.cuh — contiguize and its tiles: a section of shape_ops.cu, the one translation unit of the
 * CUDA shape kernels, which includes the sections in this order. */
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
