#version 450
#extension GL_GOOGLE_include_directive : require
/* ring_copy — dst:buf@16! src:buf@16 pos:buf@4 n:u64 geom:u64 (src/ops/shape/table.c):
 * write_slice_rotating's one ring of rows whose rows are whole 16-byte words, as stream_copy's
 * grid: source word v goes to ring word (start + v) mod (row * modulus / 16), start the
 * position's row (pos % modulus) times the row; the source is at most one ring, so a word
 * wraps once at most. geom: the row's bytes, the modulus in the high word. */
#include "xpu_vk.glsl"
#include "stream.glsl"

layout(std430, set = 0, binding = 0) writeonly buffer Dst { uvec4 dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer Src { uvec4 src[]; };
layout(std430, set = 0, binding = 2) readonly buffer Pos { uint posw[]; };
layout(push_constant) uniform Args {
	uvec2 n, geom;
	uint off_dst, off_src, off_pos;
} pc;

void main()
{
	uint lo, hi;
	stream_chunk(u64_sat(pc.n), xpu_groups(), xpu_group(), lo, hi);
	uint words = pc.geom.x / 16u, ring = words * pc.geom.y, start = (posw[pc.off_pos >> 2] % pc.geom.y) * words;
	uint d = pc.off_dst / 16u, s = pc.off_src / 16u;
	for (uint v = lo / 16u + xpu_thread(); v < hi / 16u; v += WG_SIZE) {
		uint at = start + v;
		dst[d + (at >= ring ? at - ring : at)] = src[s + v];
	}
}
