/* pad.glsl — what pad.comp and pad_rows.comp share: pad's signature (src/ops/shape/table.c:
 * out:buf! in:buf geom:u64 fill:u64 d01..d67 b01..b67 a01..a67), the row table (PAD_ROWS
 * entries, set by the includer) and the map from an output coordinate to the input's. */
#ifndef XPU_PAD_GLSL
#define XPU_PAD_GLSL

layout(std430, set = 0, binding = 0) buffer Out { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer In { uint src[]; };
layout(push_constant) uniform Args {
	uvec2 geom, fill;
	uvec2 w[12]; /* dims, before, after: eight u32 each */
	uint off_out, off_in;
} pc;

#define SHAPE_DST dst
#define SHAPE_SRC src
/* The includer's row table, PAD_ROWS entries: each output row's input row, or ~0 for a
 * constant border row. */
#define SHAPE_ROWS pad_rows
shared uint pad_rows[PAD_ROWS];
#include "shape_ops.glsl"

/* The input coordinate that output coordinate x of an axis (d long, lo before) reads, as the
 * CPU's pad_source; a constant border sets *border instead. */
uint pad_from(uint x, uint d, uint lo, uint mode, inout bool border)
{
	if (x >= lo && x - lo < d)
		return x - lo;
	if (mode == 0u) {
		border = true;
		return 0u;
	}
	if (mode == 2u)
		return x < lo ? 0u : d - 1u;
	return x < lo ? lo - x : 2u * (d - 1u) - (x - lo);
}

uint pad_d(uint k) { return SHAPE_U32(pc.w, 0u, k); }
uint pad_lo(uint k) { return SHAPE_U32(pc.w, 4u, k); }
uint pad_od(uint k) { return pad_d(k) + pad_lo(k) + SHAPE_U32(pc.w, 8u, k); }

/* The input row (every axis but the last) that output row `row` reads; border: a constant
 * border row. */
uint pad_in_row(uint row, uint rank, uint mode, inout bool border)
{
	uint rem = row, src = 0u, stride = 1u;
	for (int k = int(rank) - 2; k >= 0; k--) {
		uint od = pad_od(uint(k)), x = rem % od;
		rem /= od;
		src += pad_from(x, pad_d(uint(k)), pad_lo(uint(k)), mode, border) * stride;
		stride *= pad_d(uint(k));
	}
	return src;
}

/* Output element g, column x of a row whose input row is `at` (border: a constant border row),
 * from the input element its column maps to, or the fill. */
void pad_element(uint g, uint x, uint at, bool border, uint dl, uint lol, uint mode, uint elem)
{
	uint q = pad_from(x, dl, lol, mode, border);
	uvec2 v = pc.fill;
	if (!border)
		v = shape_load(pc.off_in + (at * dl + q) * elem, elem);
	shape_store(pc.off_out + g * elem, elem, v);
}

#endif
