#version 450
#extension GL_GOOGLE_include_directive : require
/* workgroup_scan — out:buf@8! x:buf@8 n:u32 trips:u32 op:u32 dtype:u32
 * (src/ops/workgroup/table.c): out[i], for every item i < n, is its exclusive prefix within
 * its group's trip (the reduce's items: (g * trips + k) * block + lane). i32 and i64. */
#include "workgroup.glsl"

layout(std430, set = 0, binding = 0) buffer Out { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer X { uint src[]; };
layout(push_constant) uniform Args {
	uint n, trips, op, dtype;
	uint off_out, off_x;
} pc;

void main()
{
	uint g = xpu_group(), t = gl_LocalInvocationID.x, block = gl_WorkGroupSize.x;
	bool wide = pc.dtype == XPU_WG_I64;
	uint in_at = pc.off_x / 4u, out_at = pc.off_out / 4u;
	for (uint k = 0u; k < pc.trips; k++) {
		uint i = (g * pc.trips + k) * block + t;
		uvec2 v = wg_identity(pc.op, pc.dtype);
		if (i < pc.n)
			v = wide ? uvec2(src[in_at + 2u * i], src[in_at + 2u * i + 1u]) : uvec2(src[in_at + i], 0u);
		uvec2 s = workgroup_scan(pc.op, pc.dtype, v);
		if (i < pc.n && wide) {
			dst[out_at + 2u * i] = s.x;
			dst[out_at + 2u * i + 1u] = s.y;
		} else if (i < pc.n) {
			dst[out_at + i] = s.x;
		}
	}
}
