#version 450
#extension GL_GOOGLE_include_directive : require
/* pad_backward_rows — pad_backward's signature (kernels/table_shape.c) and helpers
 * (pad_backward.glsl), for gradient rows of XPU_SHAPE_ROW_MIN items or more: a group covers
 * XPU_SHAPE_ROW_GROUPS times pad_backward's items (kernels/launch_shape.c's grid), and an
 * invocation walks columns, not items: column j, j + 256, ... of every row the group touches,
 * so what a column is (one term, or reflect's interior and one mirror, and the mirror's place
 * in the row) is worked out once per column, and an item costs its row's table entry, its
 * loads, its store. Rows go in batches of eight, every load of a batch before its stores; the
 * sums are added in the CPU's order, as pad_backward's. Items with more terms (replicate's
 * edges, both mirrors, rows with several terms on an outer axis) are summed after their
 * batch, one at a time. H200 (driver 580), 1 GiB f32, rows of 1024, reflect 16: 2941-3033
 * GB/s (77-79 % of copy; 64 registers) against pad_backward's 2013-2069, three rounds
 * alternated in one call. f32 rows on 16 bytes on both sides go as quads of four columns
 * instead (pad_bwd_quads, below), the column walk taking only their border columns. */
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
	uint per = gl_WorkGroupSize.x * uint(XPU_SHAPE_GRAIN * XPU_SHAPE_ROW_GROUPS), lo = xpu_group() * per;
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
		pad_bwd_quads(lo, hi, base, rows, d, b, after, rank, mode);
		return;
	}
#define COLUMNS(MODE, DT)                                                              \
	for (uint j = gl_LocalInvocationIndex; j < d; j += WG_SIZE)                   \
		pad_bwd_column(j, lo, hi, base, d, b, after, rank, MODE, DT)
	PAD_BWD_PER_TYPE(mode, dt, COLUMNS);
#undef COLUMNS
}
