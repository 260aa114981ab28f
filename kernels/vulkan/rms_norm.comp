#version 450
#extension GL_GOOGLE_include_directive : require
/* rms_norm — out:buf@4! x:buf@4 weight:buf@4 rows:u32 cols:u32 eps:f32 (src/ops/layer/norm.c):
 * group g normalises row g, out = (x * (1 / sqrt(sum(x^2) / cols + eps))) * weight, in
 * docs/ARITHMETIC.md's order ("Row normalisation"). */
#include "norm.glsl"

layout(std430, set = 0, binding = 0) writeonly buffer Out { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer X { uint xs[]; };
layout(std430, set = 0, binding = 2) readonly buffer W { uint ws[]; };
layout(push_constant) uniform Args {
	uint rows, cols;
	float eps;
	uint off_out, off_x, off_w;
} pc;

void main()
{
	uint g = xpu_group(), t = gl_LocalInvocationID.x, n = pc.cols;
	if (g >= pc.rows) /* the whole group leaves: no barrier is skipped by part of it */
		return;
	uint xi = pc.off_x / 4u + g * n, oi = pc.off_out / 4u + g * n, wi = pc.off_w / 4u;
	precise float acc = 0.0;
	for (uint i = t; i < n; i += XPU_NORM_BLOCK) {
		float v = uintBitsToFloat(xs[xi + i]);
		acc = acc + v * v;
	}
	float rinv = nm_inv_root(nm_sum(acc), n, pc.eps);
	for (uint i = t; i < n; i += XPU_NORM_BLOCK) {
		precise float y = (uintBitsToFloat(xs[xi + i]) * rinv) * uintBitsToFloat(ws[wi + i]);
		dst[oi + i] = floatBitsToUint(y);
	}
}
