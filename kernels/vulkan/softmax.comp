#version 450
#extension GL_GOOGLE_include_directive : require
/* softmax — out:buf@4! x:buf@4 rows:u32 cols:u32 causal:u32 pos0:u32 scale:f32
 * (src/ops/layer/norm.c): group g takes row g; it sees columns i < seen (all, or i <= pos0 + g
 * under the causal mask); v = scale * x, max = the reduce of v, e = xm_exp(v - max), sum = the
 * reduce of e, out = e * (1 / sum) where seen, exactly 0 past. docs/ARITHMETIC.md. */
#include "norm.glsl"
#include "../xmath.h"

layout(std430, set = 0, binding = 0) writeonly buffer Out { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer X { uint xs[]; };
layout(push_constant) uniform Args {
	uint rows, cols, causal, pos0;
	float scale;
	uint off_out, off_x;
} pc;

void main()
{
	uint g = xpu_group(), t = gl_LocalInvocationID.x, n = pc.cols;
	if (g >= pc.rows)
		return;
	uint xi = pc.off_x / 4u + g * n, oi = pc.off_out / 4u + g * n;
	/* pos0 + g + 1 < n, without wrapping */
	uint seen = pc.causal != 0u && pc.pos0 < n && g < n - pc.pos0 - 1u ? pc.pos0 + g + 1u : n;
	float m = uintBitsToFloat(0xff800000u);
	for (uint i = t; i < seen; i += XPU_NORM_BLOCK) {
		precise float v = pc.scale * uintBitsToFloat(xs[xi + i]);
		m = nm_max_op(m, v);
	}
	float mx = nm_max(m);
	precise float acc = 0.0;
	for (uint i = t; i < seen; i += XPU_NORM_BLOCK) {
		precise float d = pc.scale * uintBitsToFloat(xs[xi + i]) - mx;
		acc = acc + xm_exp(d);
	}
	float inv = nm_div(1.0, nm_sum(acc));
	for (uint i = t; i < n; i += XPU_NORM_BLOCK) {
		precise float d = pc.scale * uintBitsToFloat(xs[xi + i]) - mx;
		precise float y = xm_exp(d) * inv;
		dst[oi + i] = floatBitsToUint(i < seen ? y : 0.0);
	}
}
