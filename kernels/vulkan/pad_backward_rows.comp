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
 * alternated in one call. */
#define PAD_BWD_ROWS_KERNEL
#include "pad_backward.glsl"

/* Row r + k of the batch (k a constant), a lone term or an interior and a mirror, added in
 * the CPU's order (the left mirror first) and stored; written out per k, as PAD_BWD_PUT. */
#define PAD_BWD_ROW_PUT(k)                                                                      \
	if (r + (k) < r_end && (slow & (1u << (k))) == 0u) {                                    \
		precise float s = !pair ? v[k] : lm ? m[k] + v[k] : v[k] + m[k];                 \
		shape_store_f(pc.off_grad + (g0 + (k) * d) * elem, dt, s);                      \
	}

/* Column j of the rows whose items lie in [lo, hi); base is the first table row's first item.
 * d, b, after: the last axis's dim, before, after. */
void pad_bwd_column(uint j, uint lo, uint hi, uint base, uint d, uint b, uint after, uint rank, uint mode, uint dt)
{
	uint elem = dt == 0u ? 4u : 2u;
	bool lm = pad_bwd_left(j, b, mode), rm = pad_bwd_right(j, d, after, mode);
	bool one = pad_bwd_single(j, d, b, after, mode), pair = lm != rm;
	uint mo = lm ? b - j : b + 2u * (d - 1u) - j; /* the mirror, from the row's start */
	uint r = j < lo - base ? 1u : 0u, r_end = hi - base > j ? (hi - base - 1u - j) / d + 1u : 0u;
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

layout(std430, set = 0, binding = 0) buffer Grad4 { uvec4 dst4[]; };
layout(std430, set = 0, binding = 1) readonly buffer Up4 { uvec4 src4[]; };

/* f32 rows where every 16-byte word of both sides sits on 16 bytes (the quads' condition in
 * main): the group's work is quads of four columns by batches of eight rows, item w of them
 * (w = batch * quads + quad). A quad whose four columns each have one term moves a row as one
 * 16-byte load and store, the loads of its eight rows before the stores; rows with more terms,
 * and quads with a border column (reflect's mirrors, replicate's edges), go item by item. The
 * bits move as they are: a lone term's sum is the term. */
void pad_bwd_quad(uint w, uint quads, uint lo, uint hi, uint base, uint d, uint b, uint after, uint rank, uint mode)
{
	uint j0 = (w % quads) * 4u, r = (w / quads) * 8u;
	/* lo and hi sit on multiples of four items (d % 4 == 0): a quad's rows are its columns' */
	uint r0 = j0 < lo - base ? 1u : 0u, r_end = hi - base > j0 ? (hi - base - 1u - j0) / d + 1u : 0u;
	r = max(r, r0);
	uint r8 = min((w / quads) * 8u + 8u, r_end);
	bool one = pad_bwd_single(j0, d, b, after, mode) && pad_bwd_single(j0 + 1u, d, b, after, mode) &&
		   pad_bwd_single(j0 + 2u, d, b, after, mode) && pad_bwd_single(j0 + 3u, d, b, after, mode);
	uint slow = 0u;
	uvec4 v[8];
	[[unroll]] for (uint k = 0u; k < 8u; k++) {
		uint at = one && r + k < r8 ? SHAPE_ROWS[r + k] : 0xffffffffu;
		v[k] = uvec4(0u);
		if (at != 0xffffffffu)
			v[k] = src4[(pc.off_up >> 4u) + ((at + j0 + b) >> 2u)];
		slow |= r + k < r8 && at == 0xffffffffu ? 1u << k : 0u;
	}
	[[unroll]] for (uint k = 0u; k < 8u; k++)
		if (r + k < r8 && (slow & (1u << k)) == 0u)
			dst4[(pc.off_grad >> 4u) + ((base + (r + k) * d + j0) >> 2u)] = v[k];
	for (; slow != 0u; slow &= slow - 1u) {
		uint k = uint(findLSB(slow));
		for (uint c = 0u; c < 4u; c++) {
			uint at = SHAPE_ROWS[r + k];
			if (pad_bwd_single(j0 + c, d, b, after, mode) && at != 0xffffffffu)
				dst[(pc.off_grad >> 2u) + base + (r + k) * d + j0 + c] = src[(pc.off_up >> 2u) + at + j0 + c + b];
			else
				pad_bwd_slow(base + (r + k) * d + j0 + c, at, j0 + c, d, b, after, rank, mode, 0u, 4u);
		}
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
	if (dt == 0u && d % 4u == 0u && b % 4u == 0u && (d + b + after) % 4u == 0u && (pc.off_up & 15u) == 0u &&
	    (pc.off_grad & 15u) == 0u) { /* the same for the whole dispatch */
		uint quads = d / 4u, work = quads * ((rows + 7u) / 8u);
		for (uint w = gl_LocalInvocationIndex; w < work; w += WG_SIZE)
			pad_bwd_quad(w, quads, lo, hi, base, d, b, after, rank, mode);
		return;
	}
#define COLUMNS(MODE, DT)                                                              \
	for (uint j = gl_LocalInvocationIndex; j < d; j += WG_SIZE)                   \
		pad_bwd_column(j, lo, hi, base, d, b, after, rank, MODE, DT)
	PAD_BWD_PER_TYPE(mode, dt, COLUMNS);
#undef COLUMNS
}
