/* pad_backward_columns.glsl — pad_backward's column walk, on pad_backward.glsl (included
 * after it): an invocation takes column j of the group's rows, so what the column is (one
 * term, or reflect's interior and one mirror, and the mirror's place in the row) is worked out
 * once, and an item costs its row's table entry, its loads, its store. Rows go in batches of
 * eight, every load of a batch before its stores; the sums are added in the CPU's order, as
 * pad_backward's. Items with more terms (replicate's edges, both mirrors, rows with several
 * terms on an outer axis) are summed after their batch, one at a time. Used by
 * pad_backward_rows (rows in whole 16-byte chunks: the border columns, or every column where
 * the rows are not f32 on 16 bytes) and pad_backward_items (rows that are not). */

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
