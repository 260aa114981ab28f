/* shape_slab.glsl — the body of write_slice.comp and write_slice_rotating.comp (RING): item
 * e, a source element of the slab, goes to its dest element; on the ring axis the slab starts
 * at pos % modulus and wraps modulo modulus. Nothing outside the slab is written. */
#ifndef XPU_SHAPE_SLAB_GLSL
#define XPU_SHAPE_SLAB_GLSL

layout(std430, set = 0, binding = 0) buffer Dest { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer Src { uint src[]; };
#ifdef RING
layout(std430, set = 0, binding = 2) readonly buffer Pos { uint posw[]; };
layout(push_constant) uniform Args {
	uvec2 geom;
	uvec2 w[12]; /* dest dims, start, end: eight u32 each */
	uint off_dest, off_src, off_pos;
} pc;
#else
layout(push_constant) uniform Args {
	uvec2 geom;
	uvec2 w[12];
	uint off_dest, off_src;
} pc;
#endif

#define SHAPE_DST dst
#define SHAPE_SRC src
#include "shape_ops.glsl"

/* Item e, one of this invocation's (shape_item_at). */
void shape_body(uint e)
{
	uint rank = pc.geom.x & 255u, elem = (pc.geom.x >> 8) & 255u, n = 1u;
#ifdef RING
	int axis = int((pc.geom.x >> 16) & 255u);
	uint modulus = pc.geom.y, start = posw[pc.off_pos >> 2] % modulus;
#else
	int axis = -1;
	uint modulus = 1u, start = 0u;
#endif
	for (uint k = 0u; k < rank; k++)
		n *= SHAPE_U32(pc.w, 8u, k) - SHAPE_U32(pc.w, 4u, k);
	if (e >= n)
		return;
	uint rem = e, off = 0u, stride = 1u;
	for (int k = int(rank) - 1; k >= 0; k--) {
		uint s = SHAPE_U32(pc.w, 4u, uint(k)), wk = SHAPE_U32(pc.w, 8u, uint(k)) - s, x = rem % wk;
		rem /= wk;
		uint ring = start + x; /* start < modulus, x < width <= modulus: one wrap at most */
		off += (k == axis ? (ring >= modulus ? ring - modulus : ring) : s + x) * stride;
		stride *= SHAPE_U32(pc.w, 0u, uint(k));
	}
	shape_store(pc.off_dest + off * elem, elem, shape_load(pc.off_src + e * elem, elem));
}

void main()
{
	for (uint t = 0u; t < uint(XPU_SHAPE_GRAIN); t++)
		shape_body(shape_item_at(t));
}

#endif
