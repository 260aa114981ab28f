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
#define COLUMNS(MODE, DT)                                                              \
	for (uint j = gl_LocalInvocationIndex; j < d; j += WG_SIZE)                   \
		pad_bwd_column(j, lo, hi, base, d, b, after, rank, MODE, DT)
	PAD_BWD_PER_TYPE(mode, dt, COLUMNS);
#undef COLUMNS
}
