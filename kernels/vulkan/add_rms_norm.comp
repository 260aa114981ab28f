#version 450
#extension GL_GOOGLE_include_directive : require
/* add_rms_norm — out:buf@4! sum:buf@4! x:buf@4 residual:buf@4 weight:buf@4 rows:u32 cols:u32
 * eps:f32 (src/ops/layer/norm.c): group g writes sum = x + residual for row g, then rms_norm of
 * that sum into out, reading each sum back from the lane that wrote it (so sum may be x or
 * residual themselves). docs/ARITHMETIC.md, "Row normalisation". */
#include "norm.glsl"

layout(std430, set = 0, binding = 0) writeonly buffer Out { uint dst[]; };
layout(std430, set = 0, binding = 1) coherent buffer Sum { uint hs[]; };
layout(std430, set = 0, binding = 2) readonly buffer X { uint xs[]; };
layout(std430, set = 0, binding = 3) readonly buffer R { uint rs[]; };
layout(std430, set = 0, binding = 4) readonly buffer W { uint ws[]; };
layout(push_constant) uniform Args {
	uint rows, cols;
	float eps;
	uint off_out, off_sum, off_x, off_res, off_w;
} pc;

void main()
{
	uint g = xpu_group(), t = gl_LocalInvocationID.x, n = pc.cols;
	if (g >= pc.rows)
		return;
	uint xi = pc.off_x / 4u + g * n, ri = pc.off_res / 4u + g * n, hi = pc.off_sum / 4u + g * n;
	uint oi = pc.off_out / 4u + g * n, wi = pc.off_w / 4u;
	precise float acc = 0.0;
	for (uint i = t; i < n; i += XPU_NORM_BLOCK) {
		precise float h = uintBitsToFloat(xs[xi + i]) + uintBitsToFloat(rs[ri + i]);
		hs[hi + i] = floatBitsToUint(h);
		acc = acc + h * h;
	}
	float rinv = nm_inv_root(nm_sum(acc), n, pc.eps);
	for (uint i = t; i < n; i += XPU_NORM_BLOCK) {
		precise float y = (uintBitsToFloat(hs[hi + i]) * rinv) * uintBitsToFloat(ws[wi + i]);
		dst[oi + i] = floatBitsToUint(y);
	}
}
