#version 450
#extension GL_GOOGLE_include_directive : require
/* compact_count — scratch:buf@4! x:buf@4 n:u32 (src/ops/layer/select.c): scratch[g] is how
 * many of group g's items (g * BLOCK * TRIPS on, XPU_COMPACT_TRIPS blocks) are kept (> 0). */
#include "select.glsl"

layout(std430, set = 0, binding = 0) buffer Scratch { uint scratch[]; };
layout(std430, set = 0, binding = 1) readonly buffer X { uint src[]; };
layout(push_constant) uniform Args {
	uint n;
	uint off_scratch, off_x;
} pc;

void main()
{
	uint g = xpu_group(), t = gl_LocalInvocationID.x, first = g * gl_WorkGroupSize.x * XPU_COMPACT_TRIPS;
	if (first >= pc.n)
		return;
	uint kept = 0u;
	for (uint k = 0u; k < XPU_COMPACT_TRIPS; k++) {
		uint i = first + k * gl_WorkGroupSize.x + t;
		if (i < pc.n && uintBitsToFloat(src[pc.off_x / 4u + i]) > 0.0)
			kept++;
	}
	kept = workgroup_reduce(XPU_WG_ADD, XPU_WG_I32, uvec2(kept, 0u)).x;
	if (t == 0u)
		scratch[pc.off_scratch / 4u + g] = kept;
}
