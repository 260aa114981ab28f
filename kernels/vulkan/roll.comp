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

/* Item e, one of this invocation's (shape_item_at). */
void shape_body(uint e)
{
	uint dim = u64_sat(pc.dim), inner = u64_sat(pc.inner), elem = u64_sat(pc.elem);
	if (e >= u64_sat(pc.outer) * dim * inner)
		return;
	uint shift = u64_sat(pc.shift), i = e % inner, j = (e / inner) % dim, o = e / inner / dim;
	j = j >= shift ? j - shift : j + (dim - shift);
	shape_store(pc.off_out + e * elem, elem, shape_load(pc.off_in + ((o * dim + j) * inner + i) * elem, elem));
}

void main()
{
	for (uint t = 0u; t < uint(XPU_SHAPE_GRAIN); t++)
		shape_body(shape_item_at(t));
}
