#version 450
#extension GL_GOOGLE_include_directive : require
/* workgroup_reduce — out:buf@8! agree:buf@4! x:buf@8 n:u32 groups:u32 trips:u32 op:u32
 * dtype:u32 (src/ops/workgroup/table.c): group g's trip k reduces items (g * trips + k) *
 * block + lane (the identity at or past n) into out[g * trips + k], lane 0's result, and
 * agree[...], the lanes whose result differs from lane 0's in any bit. */
#include "workgroup.glsl"

layout(std430, set = 0, binding = 0) buffer Out { uint dst[]; };
layout(std430, set = 0, binding = 1) buffer Agree { uint agree[]; };
layout(std430, set = 0, binding = 2) readonly buffer X { uint src[]; };
layout(push_constant) uniform Args {
	uint n, groups, trips, op, dtype;
	uint off_out, off_agree, off_x;
} pc;

shared uvec2 first;

uvec2 load(uint i)
{
	uint at = pc.off_x / 4u;
	if (pc.dtype == XPU_WG_I64)
		return uvec2(src[at + 2u * i], src[at + 2u * i + 1u]);
	return uvec2(src[at + i], 0u);
}

void store(uint i, uvec2 v)
{
	uint at = pc.off_out / 4u;
	if (pc.dtype == XPU_WG_I64) {
		dst[at + 2u * i] = v.x;
		dst[at + 2u * i + 1u] = v.y;
	} else {
		dst[at + i] = v.x;
	}
}

void main()
{
	uint g = xpu_group(), t = gl_LocalInvocationID.x, block = gl_WorkGroupSize.x;
	if (g >= pc.groups) /* the whole group leaves: no barrier is skipped by part of it */
		return;
	for (uint k = 0u; k < pc.trips; k++) {
		uint at = g * pc.trips + k, i = at * block + t;
		uvec2 r = workgroup_reduce(pc.op, pc.dtype, i < pc.n ? load(i) : wg_identity(pc.op, pc.dtype));
		if (t == 0u)
			first = r;
		barrier();
		uvec2 differ = uvec2(r != first ? 1u : 0u, 0u);
		/* its barriers end every read of first before the next trip writes it */
		differ = workgroup_reduce(XPU_WG_ADD, XPU_WG_I32, differ);
		if (t == 0u) {
			store(at, r);
			agree[pc.off_agree / 4u + at] = differ.x;
		}
	}
}
