#version 450
#extension GL_GOOGLE_include_directive : require
/* roll — out:buf! in:buf outer:u64 dim:u64 inner:u64 shift:u64 elem:u64 (src/ops/shape/table.c).
 * out[o, j, i] = in[o, (j - shift) mod dim, i], shift already in [0, dim); item e is the
 * output element. */
layout(std430, set = 0, binding = 0) buffer Out { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer In { uint src[]; };
layout(push_constant) uniform Args {
	uvec2 outer, dim, inner, shift, elem;
	uint off_out, off_in;
} pc;

#define SHAPE_DST dst
#define SHAPE_SRC src
#include "shape_ops.glsl"

/* The cnt items from e, elements of elem bytes: loads, then stores (shape_ops.glsl). */
void roll_items(uint e, uint cnt, uint dim, uint inner, uint shift, uint elem)
{
	ShapeCursor c = shape_cursor(e, dim, inner);
	uvec2 v[XPU_SHAPE_GRAIN];
	[[unroll]] for (uint t = 0u; t < uint(XPU_SHAPE_GRAIN); t++) {
		uint j = c.j >= shift ? c.j - shift : c.j + (dim - shift);
		if (t < cnt)
			v[t] = shape_load(pc.off_in + ((c.o * dim + j) * inner + c.i) * elem, elem);
		shape_cursor_step(c);
	}
	[[unroll]] for (uint t = 0u; t < uint(XPU_SHAPE_GRAIN); t++)
		if (t < cnt)
			shape_store(pc.off_out + shape_item_at(t) * elem, elem, v[t]);
}

void main()
{
	uint dim = u64_sat(pc.dim), inner = u64_sat(pc.inner), elem = u64_sat(pc.elem), shift = u64_sat(pc.shift);
	uint n = u64_sat(pc.outer) * dim * inner, cnt = shape_count(n);
	if (cnt == 0u)
		return;
	uint e = shape_item_at(0u);
#define ROLL(E) roll_items(e, cnt, dim, inner, shift, E)
	SHAPE_PER_ELEM(elem, ROLL);
#undef ROLL
}
