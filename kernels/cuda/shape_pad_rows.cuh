/* shape_pad_rows.cuh — pad_backward_rows' walk: a section of shape_ops.cu, the one translation unit of the
 * CUDA shape kernels, which includes the sections in this order. */
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
	const uint4 x = shape_ld16<SHAPE_KEEP>(a);
	uint4 y = k == SC_ANY ? shape_ld16<SHAPE_KEEP>(a + 16) : make_uint4(0, 0, 0, 0);
	op.side_load(c.kind, c.aux, &y);
	const uint4 v = k == SC_ANY ? shape_shift16(x, y, (uint32_t)(uintptr_t)c.src & 15) : x;
	shape_st16<SHAPE_KEEP>(op.out + i0 * op.elem, op.finish(c.kind, v, y));
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
	shape_st16<SHAPE_KEEP>(dst, op.finish(kind, shape_ld16<SHAPE_KEEP>(a), y));
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
	uint4 v = shape_ld16<SHAPE_KEEP>(a);
	shape_lane_set(&v, left ? 0 : per - 1, elem, sum.bits(op.dt));
	shape_st16<SHAPE_KEEP>(dst, v);
	return true;
}

static __device__ __forceinline__ void shape_pbw_rows_walk(const shape_pad_bwd_op &op)
{
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
				x[b] = shape_ld16<SHAPE_KEEP>(a + 512 * b);
				plain |= (uint32_t)(jb >= lo_edge && jb + per <= hi_edge && !(off && jb + per == len)) << b;
			}
			if (lane == 31 && off && (plain >> (B - 1) & 1))
				xe = shape_ld16<SHAPE_KEEP>(a + 512 * (B - 1) + 16);
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
				x[b] = row ? shape_ld16<SHAPE_KEEP>(a) : make_uint4(0, 0, 0, 0);
				if (b == B - 1 && lane == 31 && ok && off)
					xe = shape_ld16<SHAPE_KEEP>(a + 16);
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
				shape_st16<SHAPE_KEEP>(out + (c0 + 32 * b) * 16, v);
			else if ((b == 0 || b == B - 1) && (early >> b & 1))
				shape_st16<SHAPE_KEEP>(out + (c0 + 32 * b) * 16, op.finish(ek[b ? 1 : 0], x[b], ey[b ? 1 : 0]));
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
