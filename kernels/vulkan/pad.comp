#version 450
#extension GL_GOOGLE_include_directive : require
/* pad — out:buf! in:buf geom:u64 fill:u64 d01..d67 b01..b67 a01..a67 (kernels/table_shape.c).
 * Item e (an output element) copies the input element its coordinates map to, or the fill
 * element in a constant border; reflect and replicate map every coordinate inside. */
layout(std430, set = 0, binding = 0) buffer Out { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer In { uint src[]; };
layout(push_constant) uniform Args {
	uvec2 geom, fill;
	uvec2 w[12]; /* dims, before, after: eight u32 each */
	uint off_out, off_in;
} pc;

#define SHAPE_DST dst
#define SHAPE_SRC src
#include "shape_ops.glsl"

/* Item e, one of this invocation's (shape_item_at). */
void shape_body(uint e)
{
	uint rank = pc.geom.x & 255u, elem = (pc.geom.x >> 8) & 255u, mode = (pc.geom.x >> 16) & 255u;
	uint n = 1u;
	for (uint k = 0u; k < rank; k++)
		n *= SHAPE_U32(pc.w, 0u, k) + SHAPE_U32(pc.w, 4u, k) + SHAPE_U32(pc.w, 8u, k);
	if (e >= n)
		return;
	uint rem = e, srci = 0u, stride = 1u;
	bool border = false;
	for (int k = int(rank) - 1; k >= 0; k--) {
		uint d = SHAPE_U32(pc.w, 0u, uint(k)), lo = SHAPE_U32(pc.w, 4u, uint(k));
		uint od = d + lo + SHAPE_U32(pc.w, 8u, uint(k)), x = rem % od;
		rem /= od;
		uint q; /* the input coordinate, as the CPU's pad_source */
		if (x >= lo && x - lo < d)
			q = x - lo;
		else if (mode == 0u) {
			border = true;
			q = 0u;
		} else if (mode == 2u)
			q = x < lo ? 0u : d - 1u;
		else
			q = x < lo ? lo - x : 2u * (d - 1u) - (x - lo);
		srci += q * stride;
		stride *= d;
	}
	uvec2 v = border ? pc.fill : shape_load(pc.off_in + srci * elem, elem);
	shape_store(pc.off_out + e * elem, elem, v);
}

void main()
{
	for (uint t = 0u; t < uint(XPU_SHAPE_GRAIN); t++)
		shape_body(shape_item_at(t));
}
