/* shape_slab.glsl — the body of write_slice.comp and write_slice_rotating.comp (RING): item
 * e, a source element of the slab, goes to its dest element; on the ring axis the slab starts
 * at pos % modulus and wraps modulo modulus. Nothing outside the slab is written. The slab's
 * runs are found once per invocation, so an item costs one division by the run length (and
 * one per axis before the run). */
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

/* The slab's runs, worked out once per invocation (kernels/cuda/shape_ops.cu's
 * shape_slab_op in 32 bits): the last axis, joined by each axis before it while the axis after
 * is whole in dest, so a run is contiguous on both sides (the source is dense); the ring axis
 * neither joins a run nor is joined. Run r's dest base comes from decoding r over the axes
 * before the run (ka); on the ring axis the slab starts at `start` and wraps modulo `modulus`
 * (axis -1: no ring); a ring on the last axis (ka == axis) wraps inside runs. */
struct Slab {
	uint rank, elem, n, run, run0, start, modulus;
	int axis, ka;
};

uint slab_d(uint k) { return SHAPE_U32(pc.w, 0u, k); }
uint slab_s(uint k) { return SHAPE_U32(pc.w, 4u, k); }
uint slab_w(uint k) { return SHAPE_U32(pc.w, 8u, k) - SHAPE_U32(pc.w, 4u, k); }

Slab slab_of()
{
	Slab sl;
	sl.rank = pc.geom.x & 255u;
	sl.elem = (pc.geom.x >> 8) & 255u;
#ifdef RING
	sl.axis = int((pc.geom.x >> 16) & 255u);
	sl.modulus = pc.geom.y;
	sl.start = posw[pc.off_pos >> 2] % sl.modulus;
#else
	sl.axis = -1;
	sl.modulus = 1u;
	sl.start = 0u;
#endif
	sl.n = 1u;
	for (uint k = 0u; k < sl.rank; k++)
		sl.n *= slab_w(k);
	sl.ka = int(sl.rank) - 1;
	for (int k = int(sl.rank) - 1; k >= 1; k--)
		if (k == sl.ka && k != sl.axis && k - 1 != sl.axis && slab_w(uint(k)) == slab_d(uint(k)))
			sl.ka = k - 1;
	uint stride = 1u;
	sl.run = 1u;
	sl.run0 = 0u;
	for (int k = int(sl.rank) - 1; k >= 0; k--) {
		if (k >= sl.ka)
			sl.run *= slab_w(uint(k));
		if (k == sl.ka)
			sl.run0 = slab_s(uint(k)) * stride; /* the run's start inside its row */
		stride *= slab_d(uint(k));
	}
	return sl;
}

uint slab_wrap(Slab sl, uint x)
{
	uint p = sl.start + x; /* start < modulus, x < width <= modulus: one wrap at most */
	return p >= sl.modulus ? p - sl.modulus : p;
}

/* Dest element of source element e: one division by the run, then run r's base from its
 * digits over the axes before the run (none when the slab is one run). */
uint slab_dest(Slab sl, uint e)
{
	uint r = e / sl.run, x = e - r * sl.run, off = 0u, stride = 1u;
	for (int k = int(sl.rank) - 1; k >= 0; k--) {
		if (k < sl.ka) {
			uint wk = slab_w(uint(k)), d = r % wk;
			r /= wk;
			off += (k == sl.axis ? slab_wrap(sl, d) : slab_s(uint(k)) + d) * stride;
		}
		stride *= slab_d(uint(k));
	}
	return off + (sl.ka == sl.axis ? slab_wrap(sl, x) : sl.run0 + x);
}

void main()
{
	Slab sl = slab_of();
	for (uint t = 0u; t < uint(XPU_SHAPE_GRAIN); t++) {
		uint e = shape_item_at(t);
		if (e >= sl.n) /* past the slab, or a row of a 2-D block past the first */
			break;
		shape_store(pc.off_dest + slab_dest(sl, e) * sl.elem, sl.elem, shape_load(pc.off_src + e * sl.elem, sl.elem));
	}
}

#endif
