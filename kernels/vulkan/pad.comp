#version 450
#extension GL_GOOGLE_include_directive : require
/* pad — out:buf! in:buf geom:u64 fill:u64 d01..d67 b01..b67 a01..a67 (src/ops/shape/table.c).
 * Item e (an output element) copies the input element its coordinates map to, or the fill
 * element in a constant border; reflect and replicate map every coordinate inside. */
/* pad's own row table, PAD_ROWS entries (1 KB) instead of shape_ops.glsl's one a group item
 * (16 KB): a group's 4096 items span PAD_ROWS rows or fewer wherever the output rows hold 17
 * items or more; shorter rows go to pad_items_direct. On the H200 (driver 580) at 1 GiB f32,
 * rows of 1056, the 16 KB table held pad at 2661-2793 GB/s, a build with 1 KB tables ran it at
 * 3214-3339 (docs/PERF.md). */
#define PAD_ROWS 256u
#include "pad.glsl"

/* The cnt items from e, elements of elem bytes, walking (output row, column) by a cursor; a
 * row's input row (or a constant border: ~0) comes from the group's row table, whose first
 * row is `first`. Loads, then stores (shape_ops.glsl). */
void pad_items(uint e, uint cnt, uint n, uint first, uint rank, uint mode, uint elem)
{
	uint last = rank > 0u ? rank - 1u : 0u;
	uint len = rank > 0u ? pad_od(last) : 1u, dl = rank > 0u ? pad_d(last) : 1u, lol = rank > 0u ? pad_lo(last) : 0u;
	ShapeCursor c = shape_cursor(e, n / len, len); /* (0, output row, column) */
	uvec2 v[XPU_SHAPE_GRAIN];
	[[unroll]] for (uint t = 0u; t < uint(XPU_SHAPE_GRAIN); t++) {
		uint in_row = t < cnt ? SHAPE_ROWS[c.j - first] : 0xffffffffu;
		bool border = in_row == 0xffffffffu;
		uint q = pad_from(c.i, dl, lol, mode, border);
		v[t] = pc.fill;
		if (!border)
			v[t] = shape_load(pc.off_in + (in_row * dl + q) * elem, elem);
		shape_cursor_step(c);
	}
	[[unroll]] for (uint t = 0u; t < uint(XPU_SHAPE_GRAIN); t++)
		if (t < cnt)
			shape_store(pc.off_out + shape_item_at(t) * elem, elem, v[t]);
}

/* A group whose items span more rows than the table: each item works out its own input row,
 * one item at a time (rows of 16 items or fewer). */
void pad_items_direct(uint cnt, uint rank, uint mode, uint elem)
{
	uint last = rank > 0u ? rank - 1u : 0u;
	uint len = rank > 0u ? pad_od(last) : 1u, dl = rank > 0u ? pad_d(last) : 1u, lol = rank > 0u ? pad_lo(last) : 0u;
	for (uint t = 0u; t < cnt; t++) {
		uint g = shape_item_at(t);
		bool border = false;
		uint in_row = pad_in_row(g / len, rank, mode, border);
		pad_element(g, g % len, in_row, border, dl, lol, mode, elem);
	}
}

/* A scalar (rank 0) is one axis of one element. */
void main()
{
	uint rank = pc.geom.x & 255u, elem = (pc.geom.x >> 8) & 255u, mode = (pc.geom.x >> 16) & 255u;
	uint n = 1u;
	for (uint k = 0u; k < rank; k++)
		n *= pad_od(k);
	uvec2 span = shape_row_span(n, rank > 0u ? pad_od(rank - 1u) : 1u);
	if (span.y > PAD_ROWS) { /* the same for the whole group: no table, no barrier */
		pad_items_direct(shape_count(n), rank, mode, elem);
		return;
	}
	for (uint r = gl_LocalInvocationIndex; r < span.y; r += WG_SIZE) {
		bool border = false;
		uint in_row = pad_in_row(span.x + r, rank, mode, border);
		SHAPE_ROWS[r] = border ? 0xffffffffu : in_row;
	}
	barrier();
	uint cnt = shape_count(n);
	if (cnt == 0u)
		return;
	uint e = shape_item_at(0u);
#define PAD(E) pad_items(e, cnt, n, span.x, rank, mode, E)
	SHAPE_PER_ELEM(elem, PAD);
#undef PAD
}
