#version 450
#extension GL_GOOGLE_include_directive : require
/* contiguize — out:buf! in:buf geom:u64 offset:i64 d01..d67 st0..st7:i64 (kernels/table_shape.c).
 * Item e, an output element, reads the view's element offset + sum(idx[k] * st[k]). The sum
 * is taken modulo 2^32 on the i64s' low words: its true value is an element inside the input
 * binding (the extent checked that), below 2^32 bytes, so the wrapped sum is that value. */
layout(std430, set = 0, binding = 0) buffer Out { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer In { uint src[]; };
layout(push_constant) uniform Args {
	uvec2 geom, offset;
	uvec2 d[4];
	uvec2 st[8];
	uint off_out, off_in;
} pc;

#define SHAPE_DST dst
#define SHAPE_SRC src
#include "shape_ops.glsl"

uint contig_d(uint k) { return SHAPE_U32(pc.d, 0u, k); }

/* The input element where output row `row` (every axis but the last) starts. */
uint contig_row(uint row, uint rank)
{
	uint rem = row, off = pc.offset.x;
	for (int k = int(rank) - 2; k >= 0; k--) {
		uint dk = contig_d(uint(k)), x = rem % dk;
		rem /= dk;
		off += x * pc.st[k].x;
	}
	return off;
}

/* An invocation's items walk (output row, column) by a cursor; a row's start is worked out
 * again only when the row changes. A scalar (rank 0) is one element at the offset. */
void main()
{
	uint rank = pc.geom.x & 255u, elem = (pc.geom.x >> 8) & 255u, n = 1u;
	for (uint k = 0u; k < rank; k++)
		n *= contig_d(k);
	uint e = shape_item_at(0u);
	if (e >= n)
		return;
	uint len = rank > 0u ? contig_d(rank - 1u) : 1u, stl = rank > 0u ? pc.st[rank - 1u].x : 0u;
	ShapeCursor c = shape_cursor(e, n / len, len); /* (0, output row, column) */
	uint row = 0xffffffffu, at = 0u;
	for (uint t = 0u; t < uint(XPU_SHAPE_GRAIN); t++) {
		e = shape_item_at(t);
		if (e >= n)
			break;
		if (c.j != row) {
			row = c.j;
			at = contig_row(row, rank);
		}
		shape_store(pc.off_out + e * elem, elem, shape_load(pc.off_in + (at + c.i * stl) * elem, elem));
		shape_cursor_step(c);
	}
}
