/* shape_rows.glsl — the body of write_slice_rotating_rows.comp (RING) and write_slice_rows.comp:
 * a block of whole dest rows (every axis after `axis` whole: rows of I items) whose axes before
 * it make a block of rings one dest span (the axis's extent times I) apart: one-wide axes, then
 * at most one partial axis, then whole ones (a KV cache of any heads; the launcher's
 * ring_of_rows picks these kernels). Ring o takes source items [o * seg, (o + 1) * seg) (seg =
 * the slab's width on the axis times I) as two contiguous runs: from row `start` on, and past
 * the ring's end from its row 0 (RING; write_slice's slab starts at its fixed start and never
 * wraps). So an item's dest is one division for its ring (none for one ring) and a compare,
 * where the plain kernels (shape_slab.glsl) decode every axis and fill a row table a group;
 * kernels/cuda/shape_ops.cu's shape_ring_rows_op is the same walk. The axis is geom's bits
 * 16-23; its high word the ring's modulus (RING) or the slab's start. */
#ifndef XPU_SHAPE_ROWS_GLSL
#define XPU_SHAPE_ROWS_GLSL

#include "slab_args.glsl"

#define SHAPE_DST dst
#define SHAPE_SRC src
#define SHAPE_ROWS ring_rows_no_table /* this body keeps no row table */
#include "shape_ops.glsl"

/* In elements: n source items, seg a ring's, span a ring's dest extent; head the dest of item 0,
 * split the items before the ring's end, wrap what the run past it steps back. */
struct Ring {
	uint elem, n, seg, span, head, split, wrap;
	bool one;
};

Ring ring_of(uint position)
{
#ifdef RING
	uint r0 = pc.geom.x & 255u, axis = (pc.geom.x >> 16) & 255u, mod = pc.geom.y;
#else
	uint r0 = pc.geom.x & 255u, axis = (pc.geom.x >> 16) & 255u;
#endif
	uint rows = 1u, stride = 1u, base = 0u, outer = 1u, width = 1u, extent = 1u;
	for (uint j = 0u; j < r0; j++) {
		uint k = r0 - 1u - j, d = SHAPE_U32(pc.w, 0u, k), s = SHAPE_U32(pc.w, 4u, k);
		uint e = SHAPE_U32(pc.w, 8u, k);
		if (k > axis)
			rows *= d;
		if (k == axis) {
			width = e - s;
			extent = d;
		}
		if (k < axis) {
			base += s * stride;
			outer *= e - s;
		}
		stride *= d;
	}
#ifdef RING
	uint st = position % mod;
#else
	uint st = position;
#endif
	Ring g;
	g.elem = (pc.geom.x >> 8) & 255u;
	g.seg = width * rows;
	g.span = extent * rows;
	g.n = outer * g.seg;
	g.head = base + st * rows;
#ifdef RING
	g.split = (mod - st) * rows;
	g.wrap = mod * rows;
#else /* write_slice's slab never wraps */
	g.split = g.seg;
	g.wrap = 0u;
#endif
	g.one = outer == 1u;
	return g;
}

uint ring_dest(Ring g, uint e)
{
	uint o = g.one ? 0u : e / g.seg, r = e - o * g.seg;
	return g.head + o * g.span + r - (r < g.split ? 0u : g.wrap);
}

/* Element t of a 16-byte chunk of elements of elem bytes, low word first. */
uvec2 chunk_elem(uvec4 v, uint t, uint elem)
{
	if (elem == 8u)
		return uvec2(v[2u * t], v[2u * t + 1u]);
	if (elem == 4u)
		return uvec2(v[t], 0u);
	uint s = (t * elem % 4u) * 8u;
	return uvec2((v[t * elem / 4u] >> s) & (elem == 1u ? 255u : 65535u), 0u);
}

/* The group's 256 * XPU_SHAPE_GRAIN items as elem 16-byte chunks an invocation, chunk
 * u * 256 + i for invocation i, every load before any store. A chunk inside one run of one ring
 * whose dest is on 16 bytes is one store; one across the wrap or a ring's end, or off 16 bytes,
 * goes element by element; the slab's last part chunk, or a source off 16 bytes, loads
 * element by element too. */
void ring_chunks(Ring g, uint elem)
{
	uint per = 16u / elem, g0 = xpu_group() * WG_SIZE * uint(XPU_SHAPE_GRAIN);
	bool al = (pc.off_src & 15u) == 0u;
	uvec4 v[8];
	[[unroll]] for (uint u = 0u; u < 8u; u++) {
		uint i0 = g0 + (u * WG_SIZE + gl_LocalInvocationIndex) * per;
		if (u < elem && al && i0 + per <= g.n)
			v[u] = src4[(pc.off_src >> 4) + i0 / per];
	}
	[[unroll]] for (uint u = 0u; u < 8u; u++) {
		uint i0 = g0 + (u * WG_SIZE + gl_LocalInvocationIndex) * per;
		if (u >= elem || i0 >= g.n)
			continue;
		if (!al || i0 + per > g.n) {
			for (uint e = i0; e < min(i0 + per, g.n); e++)
				shape_store(pc.off_dest + ring_dest(g, e) * elem, elem, shape_load(pc.off_src + e * elem, elem));
			continue;
		}
		uint o = g.one ? 0u : i0 / g.seg, r = i0 - o * g.seg;
		if (r + per <= g.seg && (r >= g.split || r + per <= g.split)) {
			uint p = pc.off_dest + (g.head + o * g.span + r - (r < g.split ? 0u : g.wrap)) * elem;
			if ((p & 15u) == 0u) {
				dst4[p >> 4] = v[u];
				continue;
			}
		}
		for (uint t = 0u; t < per; t++)
			shape_store(pc.off_dest + ring_dest(g, i0 + t) * elem, elem, chunk_elem(v[u], t, elem));
	}
}

/* The ring's position is loaded first: the start is on every store's path. */
void main()
{
#ifdef RING
	uint position = posw[pc.off_pos >> 2];
#else
	uint position = pc.geom.y;
#endif
	Ring g = ring_of(position);
	if (!xpu_item_thread())
		return;
#define CHUNKS(E) ring_chunks(g, E)
	SHAPE_PER_ELEM(g.elem, CHUNKS);
#undef CHUNKS
}

#endif
