#version 450
#extension GL_GOOGLE_include_directive : require
/* copy_bytes — dst:buf! src:buf n:u64. Items are bytes, block[0] per group; the copy covers
 * bytes [0, min(n, items)). Each thread owns one destination word of that range, so the
 * stores are whole words but at the two ends. */
#include "xpu_vk.glsl"

layout(std430, set = 0, binding = 0) buffer Dst { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer Src { uint src[]; };
layout(push_constant) uniform Args {
	uvec2 n;
	uint off_dst, off_src;
} pc;

#define BYTES_DST dst
#define BYTES_SRC src
#include "bytes.glsl"

void main()
{
	uint lim = min(u64_sat(pc.n), xpu_items(gl_WorkGroupSize.x));
	if (!xpu_item_thread() || lim == 0u)
		return;
	uint w = (pc.off_dst >> 2) + xpu_item();
	uint lo = max(4u * w, pc.off_dst), hi = min(4u * w + 4u, pc.off_dst + lim);
	if (lo < hi)
		copy_span(lo, pc.off_src + (lo - pc.off_dst), hi - lo);
}
