#version 450
#extension GL_GOOGLE_include_directive : require
/* roll — out:buf! in:buf outer:u64 dim:u64 inner:u64 shift:u64 elem:u64 (kernels/table_shape.c).
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

void main()
{
	uint dim = u64_sat(pc.dim), inner = u64_sat(pc.inner), elem = u64_sat(pc.elem), shift = u64_sat(pc.shift);
	uint n = u64_sat(pc.outer) * dim * inner, e = shape_item_at(0u);
	if (e >= n)
		return;
	ShapeCursor c = shape_cursor(e, dim, inner);
	for (uint t = 0u; t < uint(XPU_SHAPE_GRAIN); t++) {
		e = shape_item_at(t);
		if (e >= n)
			break;
		uint j = c.j >= shift ? c.j - shift : c.j + (dim - shift);
		shape_store(pc.off_out + e * elem, elem, shape_load(pc.off_in + ((c.o * dim + j) * inner + c.i) * elem, elem));
		shape_cursor_step(c);
	}
}
