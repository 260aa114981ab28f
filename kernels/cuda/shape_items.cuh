/* shape_items.cuh — the item walks: pad, pad_backward, flip, triu and tril on rows that are not whole chunks: a section of shape_ops.cu, the one translation unit of the
 * CUDA shape kernels, which includes the sections in this order. */
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
