#version 450
#extension GL_GOOGLE_include_directive : require
/* layer_norm — out:buf@4! x:buf@4 weight:buf@4 bias:buf@4 rows:u32 cols:u32 has_bias:u32
 * eps:f32 (src/ops/layer/norm.c): group g normalises row g in two passes over it, mean =
 * sum(x) / cols, then var = sum((x - mean)^2) / cols, out = ((x - mean) * (1 / sqrt(var +
 * eps))) * weight (+ bias where has_bias). docs/ARITHMETIC.md, "Row normalisation". */
#include "norm.glsl"

layout(std430, set = 0, binding = 0) writeonly buffer Out { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer X { uint xs[]; };
layout(std430, set = 0, binding = 2) readonly buffer W { uint ws[]; };
layout(std430, set = 0, binding = 3) readonly buffer Bias { uint bs[]; };
layout(push_constant) uniform Args {
	uint rows, cols, has_bias;
	float eps;
	uint off_out, off_x, off_w, off_b;
} pc;

void main()
{
	uint g = xpu_group(), t = gl_LocalInvocationID.x, n = pc.cols;
	if (g >= pc.rows)
		return;
	uint xi = pc.off_x / 4u + g * n, oi = pc.off_out / 4u + g * n, wi = pc.off_w / 4u, bi = pc.off_b / 4u;
	precise float acc = 0.0;
	for (uint i = t; i < n; i += XPU_NORM_BLOCK)
		acc = acc + uintBitsToFloat(xs[xi + i]);
	float mean = nm_div(nm_sum(acc), float(n));
	precise float acc2 = 0.0;
	for (uint i = t; i < n; i += XPU_NORM_BLOCK) {
		precise float d = uintBitsToFloat(xs[xi + i]) - mean;
		acc2 = acc2 + d * d;
	}
	float rinv = nm_inv_root(nm_sum(acc2), n, pc.eps);
	for (uint i = t; i < n; i += XPU_NORM_BLOCK) {
		precise float y = ((uintBitsToFloat(xs[xi + i]) - mean) * rinv) * uintBitsToFloat(ws[wi + i]);
		if (pc.has_bias != 0u)
			y = y + uintBitsToFloat(bs[bi + i]);
		dst[oi + i] = floatBitsToUint(y);
	}
}
