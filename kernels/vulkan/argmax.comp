#version 450
#extension GL_GOOGLE_include_directive : require
/* argmax — out:buf@4! x:buf@4 rows:u32 cols:u32 (src/ops/layer/select.c): out[r] is the first
 * index of row r's maximum, a NaN above every number (its first index wins), -0 equal to +0.
 * Lane t keeps the best key of elements t, t + block, ...; the workgroup reduce (max over
 * the i64 keys) picks the row's. A max over a total order: any order gives the same index. */
#include "select.glsl"

layout(std430, set = 0, binding = 0) buffer Out { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer X { uint src[]; };
layout(push_constant) uniform Args {
	uint rows, cols;
	uint off_out, off_x;
} pc;

void main()
{
	uint r = xpu_group(), t = gl_LocalInvocationID.x;
	if (r >= pc.rows) /* the whole group leaves: no barrier is skipped by part of it */
		return;
	uint at = pc.off_x / 4u + r * pc.cols;
	uvec2 best = wg_identity(XPU_WG_MAX, XPU_WG_I64);
	for (uint i = t; i < pc.cols; i += gl_WorkGroupSize.x)
		best = wg_op_i64(XPU_WG_MAX, best, sel_key(src[at + i], i));
	best = workgroup_reduce(XPU_WG_MAX, XPU_WG_I64, best);
	if (t == 0u)
		dst[pc.off_out / 4u + r] = sel_index(best);
}
