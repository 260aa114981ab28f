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

/* Item e, one of this invocation's (shape_item_at). */
void shape_body(uint e)
{
	uint rank = pc.geom.x & 255u, elem = (pc.geom.x >> 8) & 255u, n = 1u;
	for (uint k = 0u; k < rank; k++)
		n *= SHAPE_U32(pc.d, 0u, k);
	if (e >= n)
		return;
	uint rem = e, off = pc.offset.x;
	for (int k = int(rank) - 1; k >= 0; k--) {
		uint dk = SHAPE_U32(pc.d, 0u, uint(k)), x = rem % dk;
		rem /= dk;
		off += x * pc.st[k].x;
	}
	shape_store(pc.off_out + e * elem, elem, shape_load(pc.off_in + off * elem, elem));
}

void main()
{
	for (uint t = 0u; t < uint(XPU_SHAPE_GRAIN); t++)
		shape_body(shape_item_at(t));
}
