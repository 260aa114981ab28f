#version 450
#extension GL_GOOGLE_include_directive : require
/* pad_backward_rows — pad_backward's signature (src/ops/shape/table.c) and helpers
 * (pad_backward.glsl), for gradient rows of XPU_SHAPE_ROW_MIN items or more: a group covers
 * XPU_SHAPE_ROW_GROUPS times pad_backward's items (src/ops/shape/launch.c's grid), and an
 * invocation walks columns, not items: column j, j + 256, ... of every row the group touches,
 * so what a column is (one term, or reflect's interior and one mirror, and the mirror's place
 * in the row) is worked out once per column, and an item costs its row's table entry, its
 * loads, its store. Rows go in batches of eight, every load of a batch before its stores; the
 * sums are added in the CPU's order, as pad_backward's. Items with more terms (replicate's
 * edges, both mirrors, rows with several terms on an outer axis) are summed after their
 * batch, one at a time. H200 (driver 580), 1 GiB f32, rows of 1024, reflect 16: 2941-3033
 * GB/s (77-79 % of copy; 64 registers) against pad_backward's 2013-2069, three rounds
 * alternated in one call. f32 rows on 16 bytes on both sides go as 16-byte chunks instead
 * (pad_bwd_chunks, below), or as quads of four columns with PBW_CHUNKS 0 (pad_bwd_quads, the
 * column walk taking only their border columns). */
#define PAD_BWD_ROWS_KERNEL
#include "pad_backward.glsl"

/* Row r + k of the batch (k a constant), a lone term or an interior and a mirror, added in
 * the CPU's order (the left mirror first) and stored; written out per k, as PAD_BWD_PUT. */
#define PAD_BWD_ROW_PUT(k)                                                                      \
	if (r + (k) < r_end && (slow & (1u << (k))) == 0u) {                                    \
		precise float s = !pair ? v[k] : lm ? m[k] + v[k] : v[k] + m[k];                 \
		shape_store_f(pc.off_grad + (g0 + (k) * d) * elem, dt, s);                      \
	}

/* Column j of table rows [r, r_end); base is the first table row's first item. d, b, after:
 * the last axis's dim, before, after. */
void pad_bwd_column_rows(uint j, uint r, uint r_end, uint base, uint d, uint b, uint after, uint rank, uint mode,
			 uint dt)
{
	uint elem = dt == 0u ? 4u : 2u;
	bool lm = pad_bwd_left(j, b, mode), rm = pad_bwd_right(j, d, after, mode);
	bool one = pad_bwd_single(j, d, b, after, mode), pair = lm != rm;
	uint mo = lm ? b - j : b + 2u * (d - 1u) - j; /* the mirror, from the row's start */
	for (; r < r_end; r += 8u) {
		uint slow = 0u, g0 = base + r * d + j;
		float v[8], m[8];
		[[unroll]] for (uint k = 0u; k < 8u; k++) {
			uint at = r + k < r_end ? SHAPE_ROWS[r + k] : 0xffffffffu;
			bool fast = at != 0xffffffffu && (one || pair);
			v[k] = 0.0;
			m[k] = 0.0;
			if (fast)
				v[k] = shape_load_f(pc.off_up + (at + j + b) * elem, dt);
			if (fast && pair)
				m[k] = shape_load_f(pc.off_up + (at + mo) * elem, dt);
			slow |= r + k < r_end && !fast ? 1u << k : 0u;
		}
		PAD_BWD_ROW_PUT(0u);
		PAD_BWD_ROW_PUT(1u);
		PAD_BWD_ROW_PUT(2u);
		PAD_BWD_ROW_PUT(3u);
		PAD_BWD_ROW_PUT(4u);
		PAD_BWD_ROW_PUT(5u);
		PAD_BWD_ROW_PUT(6u);
		PAD_BWD_ROW_PUT(7u);
		for (uint k = 0u; slow != 0u && k < 8u; k++) {
			if ((slow & (1u << k)) == 0u)
				continue;
			pad_bwd_slow(g0 + k * d, SHAPE_ROWS[r + k], j, d, b, after, rank, mode, dt, elem);
		}
	}
}

/* Column j of the rows whose items lie in [lo, hi). */
void pad_bwd_column(uint j, uint lo, uint hi, uint base, uint d, uint b, uint after, uint rank, uint mode, uint dt)
{
	uint r = j < lo - base ? 1u : 0u, r_end = hi - base > j ? (hi - base - 1u - j) / d + 1u : 0u;
	pad_bwd_column_rows(j, r, r_end, base, d, b, after, rank, mode, dt);
}

layout(std430, set = 0, binding = 0) buffer Grad4 { uvec4 dst4[]; };
layout(std430, set = 0, binding = 1) readonly buffer Up4 { uvec4 src4[]; };

/* PBW_QUADS 0 leaves every row to the column walk; PBW_QB is the quads' rows a batch. H200
 * (driver 580), 1 GiB f32, rows of 1024, reflect 16, three processes each, one binary with the
 * module swapped (XPULUA_VULKAN_SPV): the column walk 3028-3200 GB/s (79-83 % of the process's
 * copy), quads of 4 rows a batch 3338-3361 (88-89 %), of 8 rows 2711-2813 (both forms at 80
 * registers, scripts/manifest.lua). With the border quads inside the quad walk (element by
 * element, or by the column walk inlined there) it ran 1458-2197: the border columns are a
 * second phase of their own. */
#ifndef PBW_QUADS
#define PBW_QUADS 1
#endif
#ifndef PBW_QB
#define PBW_QB 4u
#endif

/* f32 rows where every 16-byte word of both sides sits on 16 bytes (main's condition): quad q's
 * four interior columns, batch `batch` of PBW_QB rows, a row as one 16-byte load and store, the
 * batch's loads before its stores; the bits move as they are (a lone term's sum is the term).
 * A row of several terms goes by the odometer. The border quads' columns (reflect's mirrors,
 * replicate's edges) are pad_bwd_quads' second phase. */
void pad_bwd_quad(uint q, uint batch, uint lo, uint hi, uint base, uint d, uint b, uint rank, uint mode)
{
	uint j0 = q * 4u;
	/* lo and hi sit on multiples of four items (d % 4 == 0): a quad's rows are its columns' */
	uint r0 = j0 < lo - base ? 1u : 0u, r_end = hi - base > j0 ? (hi - base - 1u - j0) / d + 1u : 0u;
	uint r = max(batch * PBW_QB, r0), re = min(batch * PBW_QB + PBW_QB, r_end);
	uint slow = 0u;
	uvec4 v[PBW_QB];
	[[unroll]] for (uint k = 0u; k < PBW_QB; k++) {
		uint at = r + k < re ? SHAPE_ROWS[r + k] : 0xffffffffu;
		v[k] = uvec4(0u);
		if (at != 0xffffffffu)
			v[k] = src4[(pc.off_up >> 4u) + ((at + j0 + b) >> 2u)];
		slow |= r + k < re && at == 0xffffffffu ? 1u << k : 0u;
	}
	[[unroll]] for (uint k = 0u; k < PBW_QB; k++)
		if (r + k < re && (slow & (1u << k)) == 0u)
			dst4[(pc.off_grad >> 4u) + ((base + (r + k) * d + j0) >> 2u)] = v[k];
	for (; slow != 0u; slow &= slow - 1u) {
		uint k = uint(findLSB(slow));
		for (uint c = 0u; c < 4u; c++)
			pad_bwd_terms(base + (r + k) * d + j0 + c, rank, 0u, mode, 4u);
	}
}

/* The group's f32 columns on 16 bytes: quads [ql, qr) by pad_bwd_quad, then the border
 * quads' columns (those of quads below ql and from qr on: every column pad read into more
 * than one place, and their neighbours) by the column walk, each a batch of eight rows. The
 * two phases share one numbering of work items, so an invocation with fewer quads takes
 * more columns. */
void pad_bwd_quads(uint lo, uint hi, uint base, uint rows, uint d, uint b, uint after, uint rank, uint mode)
{
	uint quads = d / 4u, batches = (rows + PBW_QB - 1u) / PBW_QB;
	uint ql = mode == 0u ? 0u : min(quads, (b + 4u) / 4u);
	uint qr = mode == 0u ? quads : max(ql, (d - 1u - min(after, d - 1u)) / 4u);
	uint inner = qr - ql, w1 = inner * batches, cols = 4u * (quads - inner), w2 = cols * ((rows + 7u) / 8u);
	uint w = gl_LocalInvocationIndex;
	for (; w < w1; w += WG_SIZE)
		pad_bwd_quad(ql + w % inner, w / inner, lo, hi, base, d, b, rank, mode);
	for (; w < w1 + w2; w += WG_SIZE) {
		uint k = (w - w1) % cols, rb = (w - w1) / cols * 8u;
		uint j = k < 4u * ql ? k : 4u * qr + (k - 4u * ql);
		uint r0 = j < lo - base ? 1u : 0u, r_end = hi - base > j ? (hi - base - 1u - j) / d + 1u : 0u;
		pad_bwd_column_rows(j, max(rb, r0), min(rb + 8u, r_end), base, d, b, after, rank, mode, 0u);
	}
}

/* PBW_CHUNKS 0 leaves f32 rows on 16 bytes to the quads above (pad_bwd_chunks, below, says
 * what each measured); PBW_CB is the chunks an invocation has in flight. */
#ifndef PBW_CHUNKS
#define PBW_CHUNKS 1
#endif
#ifndef PBW_CB
#define PBW_CB 8u
#endif
/* 1: workgroup 0 takes the dispatch's last group, so the row with several upstream rows at a
 * rows axis padded at its end (whose chunks cost more than a plain group's) starts first and
 * ends inside the dispatch instead of after it; 0: dispatch order. H200, 1 GiB f32, padding
 * ((1, 1), (16, 16)), two rounds: reflect 3596-3597 GB/s against 3264 / 3609, replicate
 * 3243-3281 against 3002-3145 (CUDA's pad_backward_rows gained 6 % on reflect from it). */
#ifndef PBW_LAST_FIRST
#define PBW_LAST_FIRST 1
#endif

/* A border chunk in flight: gradient items g .. g + 3 (column j of its row, whose upstream
 * start is at), its interior quad and mirror words, and which of its columns take a mirror
 * (pair), the left one (left), or several terms along the row (multi). Its loads and its store
 * are two functions so that other work can go between them; sending its loads with the first
 * batch was tried that way, and lost (pad_bwd_chunks). */
struct PbwBorder {
	uint g, j, at, pair, left, multi;
	uvec4 v;
	vec4 m;
};

/* Border item k of the group's rows (nb border quads a row: [0, ql) and [qr, quads)): its
 * loads, the interior as one 16-byte load and reflect's mirrors as words, issued together.
 * live false where the item lies outside [lo, hi); at ~0 where the row has several terms. */
PbwBorder pad_bwd_border_load(uint k, uint nb, uint ql, uint qr, uint lo, uint hi, uint base, uint d, uint b,
			      uint after, uint mode, out bool live)
{
	PbwBorder c;
	uint r = k / nb, qb = k - r * nb;
	c.j = 4u * (qb < ql ? qb : qr + (qb - ql));
	c.g = base + r * d + c.j;
	live = c.g >= lo && c.g < hi;
	c.at = live ? SHAPE_ROWS[r] : 0xffffffffu;
	c.v = uvec4(0u);
	c.m = vec4(0.0);
	c.pair = c.left = c.multi = 0u;
	if (c.at == 0xffffffffu)
		return c;
	c.v = src4[(pc.off_up >> 4u) + ((c.at + b + c.j) >> 2u)];
	[[unroll]] for (uint e = 0u; e < 4u; e++) {
		uint col = c.j + e;
		bool lm = pad_bwd_left(col, b, mode), rm = pad_bwd_right(col, d, after, mode);
		if (lm != rm)
			c.m[e] = uintBitsToFloat(src[(pc.off_up >> 2u) + c.at + (lm ? b - col : b + 2u * (d - 1u) - col)]);
		c.pair |= lm != rm ? 1u << e : 0u;
		c.left |= lm ? 1u << e : 0u;
		c.multi |= lm == rm && !pad_bwd_single(col, d, b, after, mode) ? 1u << e : 0u;
	}
	return c;
}

/* The border chunk's sums, in the CPU's order (the left mirror first), and its store; a lone
 * term's bits move as they are. Replicate's edge columns are summed by pad_bwd_last after the
 * chunk's store, rows of several terms by the odometer. */
void pad_bwd_border_store(PbwBorder c, uint d, uint b, uint after, uint rank, uint mode)
{
	if (c.at == 0xffffffffu) {
		for (uint e = 0u; e < 4u; e++)
			pad_bwd_terms(c.g + e, rank, 0u, mode, 4u);
		return;
	}
	uvec4 s = c.v;
	/* no [[unroll]]: glslc's unroller strips `precise` from the add (vulkan.mk's check) */
	for (uint e = 0u; e < 4u; e++) {
		float v = uintBitsToFloat(c.v[e]);
		precise float t = (c.left & (1u << e)) != 0u ? c.m[e] + v : v + c.m[e];
		if ((c.pair & (1u << e)) != 0u)
			s[e] = floatBitsToUint(t);
	}
	dst4[(pc.off_grad >> 4u) + (c.g >> 2u)] = s;
	for (uint multi = c.multi; multi != 0u; multi &= multi - 1u) {
		uint e = uint(findLSB(multi));
		shape_store_f(pc.off_grad + (c.g + e) * 4u, 0u, pad_bwd_last(c.at, c.j + e, d, b, after, mode, 0u, 4u));
	}
}

/* f32 rows on 16 bytes (main's condition) as 16-byte chunks of two kinds that share one
 * numbering of work items: first the chunks whose four columns each have one term (quads
 * [ql, qr) of every row), PBW_CB an invocation in flight, each item's (row, quad) stepped from
 * the last by adds, with no division; then the border chunks, one item each, so an invocation
 * with one chunk fewer of the first kind takes one. False, and nothing done, where a chunk
 * would hold both mirrors (ql > qr): the same for the whole dispatch.
 * H200 (driver 580), 1 GiB f32, rows of 1024, reflect 16 on the last axis and 1 on the first,
 * % of the copy between the op's own buffers, alternated with the quads: 89-93 % against
 * 86-91 % (121 registers against 80). Three forms were slower there (docs/PERF.md, "pad_backward
 * by chunks"): a border chunk's loads sent with the first batch (the driver then keeps arrays
 * in shared memory at 80 registers: 54-55 %), the module without the quads (62 % one build,
 * 90-92 % another), and the odometer from one call site at the group's end (48 registers,
 * 87-90 %). */
bool pad_bwd_chunks(uint lo, uint hi, uint base, uint rows, uint d, uint b, uint after, uint rank, uint mode)
{
	uint quads = d / 4u, ql = 0u, qr = quads;
	if (mode == 1u) {
		ql = b == 0u ? 0u : b / 4u + 1u;
		qr = after == 0u ? quads : (d - 1u - after) / 4u;
	} else if (mode == 2u) {
		ql = b == 0u ? 0u : 1u;
		qr = after == 0u ? quads : quads - 1u;
	}
	if (ql > qr)
		return false;
	uint inner = qr - ql, nb = quads - inner, w1 = rows * inner, w2 = rows * nb;
	uint i = gl_LocalInvocationIndex, up = (pc.off_up >> 4u) + ql, gr = pc.off_grad >> 4u;
	if (inner != 0u) {
		uint r = i / inner, q = i - r * inner, sr = WG_SIZE / inner, sq = WG_SIZE - sr * inner;
		for (uint w = i; w < w1; w += PBW_CB * WG_SIZE) {
			uvec4 v[PBW_CB];
			uint to[PBW_CB], put = 0u, slow = 0u;
			[[unroll]] for (uint k = 0u; k < PBW_CB; k++) {
				uint g = base + r * d + 4u * (ql + q);
				bool ok = w + k * WG_SIZE < w1 && g >= lo && g < hi;
				uint at = ok ? SHAPE_ROWS[r] : 0xffffffffu;
				to[k] = g;
				v[k] = uvec4(0u);
				if (at != 0xffffffffu)
					v[k] = src4[up + ((at + b) >> 2u) + q];
				put |= at != 0xffffffffu ? 1u << k : 0u;
				slow |= ok && at == 0xffffffffu ? 1u << k : 0u;
				q += sq;
				r += sr;
				if (q >= inner) {
					q -= inner;
					r++;
				}
			}
			[[unroll]] for (uint k = 0u; k < PBW_CB; k++)
				if ((put & (1u << k)) != 0u)
					dst4[gr + (to[k] >> 2u)] = v[k];
			for (; slow != 0u; slow &= slow - 1u) {
				uint k = uint(findLSB(slow));
				for (uint e = 0u; e < 4u; e++)
					pad_bwd_terms(to[k] + e, rank, 0u, mode, 4u);
			}
		}
	}
	uint wb = w1 <= i ? i : i + (w1 - i + WG_SIZE - 1u) / WG_SIZE * WG_SIZE; /* first border item */
	for (; wb < w1 + w2; wb += WG_SIZE) {
		bool live;
		PbwBorder c = pad_bwd_border_load(wb - w1, nb, ql, qr, lo, hi, base, d, b, after, mode, live);
		if (live)
			pad_bwd_border_store(c, d, b, after, rank, mode);
	}
	return true;
}

void main()
{
	uint rank = pc.geom.x & 255u, dt = (pc.geom.x >> 8) & 255u, mode = (pc.geom.x >> 16) & 255u;
	uint n = 1u;
	if (dt == 1u || dt > 3u || rank == 0u)
		return;
	for (uint k = 0u; k < rank; k++)
		n *= SHAPE_U32(pc.w, 0u, k);
	uint last = rank - 1u, d = SHAPE_U32(pc.w, 0u, last);
	uint b = SHAPE_U32(pc.w, 4u, last), after = SHAPE_U32(pc.w, 8u, last);
	uint groups = xpu_groups(), grp = PBW_LAST_FIRST != 0 ? (xpu_group() + groups - 1u) % groups : xpu_group();
	uint per = gl_WorkGroupSize.x * uint(XPU_SHAPE_GRAIN * XPU_SHAPE_ROW_GROUPS), lo = grp * per;
	if (lo >= n || d == 0u) /* the same for the whole group */
		return;
	uint hi = n - lo > per ? lo + per : n, first = lo / d, rows = (hi - 1u) / d - first + 1u;
	if (rows > PAD_BWD_ROWS) { /* rows shorter than the launcher gives it: item by item */
		for (uint e = lo + gl_LocalInvocationIndex; e < hi; e += WG_SIZE)
			pad_bwd_terms(e, rank, dt, mode, dt == 0u ? 4u : 2u);
		return;
	}
	pad_bwd_fill(first, rows, rank, mode);
	uint base = first * d;
	if (PBW_QUADS != 0 && dt == 0u && d % 4u == 0u && b % 4u == 0u && (d + b + after) % 4u == 0u &&
	    (pc.off_up & 15u) == 0u && (pc.off_grad & 15u) == 0u) { /* the same for the whole dispatch */
		if (PBW_CHUNKS != 0 && pad_bwd_chunks(lo, hi, base, rows, d, b, after, rank, mode))
			return;
		/* with the chunks, only rows where a chunk holds both mirrors come here: the quads'
		 * column walk then takes every column (kept in the module: pad_bwd_chunks says why) */
		pad_bwd_quads(lo, hi, base, rows, d, b, after, rank, mode);
		return;
	}
#define COLUMNS(MODE, DT)                                                              \
	for (uint j = gl_LocalInvocationIndex; j < d; j += WG_SIZE)                   \
		pad_bwd_column(j, lo, hi, base, d, b, after, rank, MODE, DT)
	PAD_BWD_PER_TYPE(mode, dt, COLUMNS);
#undef COLUMNS
}
