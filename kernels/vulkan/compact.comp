#version 450
#extension GL_GOOGLE_include_directive : require
/* compact — values:buf@4! indices:buf@4! count:buf@4! x:buf@4 n:u32 (src/ops/layer/select.c):
 * one workgroup walks x a block at a time; the workgroup scan of the keep flags (x[i] > 0:
 * not NaN, not -0) places each kept element after those before it, in order; count[0] is
 * how many. Nothing past the count is written. */
#include "select.glsl"

layout(std430, set = 0, binding = 0) buffer Values { uint vals[]; };
layout(std430, set = 0, binding = 1) buffer Indices { uint idx[]; };
layout(std430, set = 0, binding = 2) buffer Count { uint cnt[]; };
layout(std430, set = 0, binding = 3) readonly buffer X { uint src[]; };
layout(push_constant) uniform Args {
	uint n;
	uint off_values, off_indices, off_count, off_x;
} pc;

void main()
{
	uint t = gl_LocalInvocationID.x, base = 0u;
	if (xpu_group() != 0u)
		return;
	for (uint first = 0u; first < pc.n; first += gl_WorkGroupSize.x) {
		uint i = first + t, bits = i < pc.n ? src[pc.off_x / 4u + i] : 0u;
		uvec2 keep = uvec2(i < pc.n && uintBitsToFloat(bits) > 0.0 ? 1u : 0u, 0u);
		uint at = base + workgroup_scan(XPU_WG_ADD, XPU_WG_I32, keep).x;
		base += workgroup_reduce(XPU_WG_ADD, XPU_WG_I32, keep).x;
		if (keep.x != 0u) {
			vals[pc.off_values / 4u + at] = bits;
			idx[pc.off_indices / 4u + at] = i;
		}
	}
	if (t == 0u)
		cnt[pc.off_count / 4u] = base;
}
