#version 450
#extension GL_GOOGLE_include_directive : require
/* stream_copy — dst:buf@16! src:buf@16 n:u64. Group g of the grid copies its chunk in
 * 16-byte words. */
#include "xpu_vk.glsl"
#include "stream.glsl"

layout(std430, set = 0, binding = 0) writeonly buffer Dst { uvec4 dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer Src { uvec4 src[]; };
layout(push_constant) uniform Args {
	uvec2 n;
	uint off_dst, off_src;
} pc;

/* -DSMEM_WORDS=N (a probe build, never the embedded one): the group also holds N words of shared
 * memory it never touches in practice, to see what a group's shared memory costs in groups an
 * SM keeps (docs/PERF.md, "Shared memory and occupancy on NVIDIA's Vulkan driver"). */
#ifdef SMEM_WORDS
shared uint smem_probe[SMEM_WORDS];
#endif

void main()
{
#ifdef SMEM_WORDS
	if (pc.n.y == 0xFFFFFFFFu) { /* never at a real size; keeps the array allocated */
		smem_probe[gl_LocalInvocationIndex % uint(SMEM_WORDS)] = pc.off_src;
		barrier();
		dst[0].x = smem_probe[(gl_LocalInvocationIndex * 7u) % uint(SMEM_WORDS)];
	}
#endif
	uint lo, hi;
	stream_chunk(u64_sat(pc.n), xpu_groups(), xpu_group(), lo, hi);
	uint d = pc.off_dst / 16u, s = pc.off_src / 16u;
	for (uint v = lo / 16u + xpu_thread(); v < hi / 16u; v += WG_SIZE)
		dst[d + v] = src[s + v];
}
