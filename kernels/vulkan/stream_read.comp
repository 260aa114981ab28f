#version 450
#extension GL_GOOGLE_include_directive : require
/* stream_read — out:buf@4! src:buf@16 n:u64 groups:u32. Group g < groups sums the 32-bit
 * words of its chunk into out[g], wrapping (an integer sum: the order does not matter). */
#include "xpu_vk.glsl"
#include "stream.glsl"

layout(std430, set = 0, binding = 0) writeonly buffer Out { uint outw[]; };
layout(std430, set = 0, binding = 1) readonly buffer Src { uvec4 src[]; };
layout(push_constant) uniform Args {
	uvec2 n;
	uint groups;
	uint off_out, off_src;
} pc;

shared uint total;

void main()
{
	uint g = xpu_group(), t = xpu_thread(), lo, hi;
	if (g >= pc.groups)
		return;
	stream_chunk(u64_sat(pc.n), pc.groups, g, lo, hi);
	if (t == 0u)
		total = 0u;
	barrier();
	uint sum = 0u, base = pc.off_src / 16u;
	for (uint v = lo / 16u + t; v < hi / 16u; v += WG_SIZE) {
		uvec4 q = src[base + v];
		sum += q.x + q.y + q.z + q.w;
	}
	atomicAdd(total, sum);
	barrier();
	if (t == 0u)
		outw[pc.off_out / 4u + g] = total;
}
