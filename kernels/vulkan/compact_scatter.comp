#version 450
#extension GL_GOOGLE_include_directive : require
/* compact_scatter — values:buf@4! indices:buf@4! scratch:buf@4 x:buf@4 n:u32
 * (src/ops/layer/select.c): group g places its kept items (compact_count's range) from
 * scratch[g] (compact_offsets' scan) on, in order, as the one-group compact does. */
#include "select.glsl"

layout(std430, set = 0, binding = 0) buffer Values { uint vals[]; };
layout(std430, set = 0, binding = 1) buffer Indices { uint idx[]; };
layout(std430, set = 0, binding = 2) readonly buffer Scratch { uint scratch[]; };
layout(std430, set = 0, binding = 3) readonly buffer X { uint src[]; };
layout(push_constant) uniform Args {
	uint n;
	uint off_values, off_indices, off_scratch, off_x;
} pc;

void main()
{
	uint g = xpu_group(), t = gl_LocalInvocationID.x, first = g * gl_WorkGroupSize.x * XPU_COMPACT_TRIPS;
	if (first >= pc.n)
		return;
	uint base = scratch[pc.off_scratch / 4u + g];
	for (uint k = 0u; k < XPU_COMPACT_TRIPS; k++) {
		uint i = first + k * gl_WorkGroupSize.x + t, bits = i < pc.n ? src[pc.off_x / 4u + i] : 0u;
		uvec2 keep = uvec2(i < pc.n && uintBitsToFloat(bits) > 0.0 ? 1u : 0u, 0u);
		uint at = base + workgroup_scan(XPU_WG_ADD, XPU_WG_I32, keep).x;
		base += workgroup_reduce(XPU_WG_ADD, XPU_WG_I32, keep).x;
		if (keep.x != 0u) {
			vals[pc.off_values / 4u + at] = bits;
			idx[pc.off_indices / 4u + at] = i;
		}
	}
}
