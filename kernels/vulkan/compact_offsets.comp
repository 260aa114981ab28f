#version 450
#extension GL_GOOGLE_include_directive : require
/* compact_offsets — scratch:buf@4! count:buf@4! groups:u32 (src/ops/layer/select.c): one
 * workgroup turns the per-group counts into their exclusive scan, in place, a block at a
 * time (each lane reads its count before the scan's barriers, writes it after); count[0] is
 * the total. */
#include "select.glsl"

layout(std430, set = 0, binding = 0) buffer Scratch { uint scratch[]; };
layout(std430, set = 0, binding = 1) buffer Count { uint cnt[]; };
layout(push_constant) uniform Args {
	uint groups;
	uint off_scratch, off_count;
} pc;

void main()
{
	uint t = gl_LocalInvocationID.x, base = 0u, at = pc.off_scratch / 4u;
	if (xpu_group() != 0u)
		return;
	for (uint first = 0u; first < pc.groups; first += gl_WorkGroupSize.x) {
		uint i = first + t;
		uvec2 v = uvec2(i < pc.groups ? scratch[at + i] : 0u, 0u);
		uint off = base + workgroup_scan(XPU_WG_ADD, XPU_WG_I32, v).x;
		base += workgroup_reduce(XPU_WG_ADD, XPU_WG_I32, v).x;
		if (i < pc.groups)
			scratch[at + i] = off;
	}
	if (t == 0u)
		cnt[pc.off_count / 4u] = base;
}
