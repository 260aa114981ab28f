#version 450
#extension GL_GOOGLE_include_directive : require
/* attention_combine — out:buf@4! part:buf@4 n_head:u32 hd:u32 n_split:u32
 * (src/ops/layer/attention.c): group g folds query head g's decode partials (m, l, acc) in
 * split order: M = the max of m, w = exp(m - M), L = the sum of l w, O[d] = the sum of acc[d]
 * w, out = O * (1 / L), the reciprocal correctly rounded (xm_div). kernels/cpu/attention.c. */
#include "attention.glsl"

layout(std430, set = 0, binding = 0) writeonly buffer Out { float outv[]; };
layout(std430, set = 0, binding = 1) readonly buffer Part { float part[]; };
layout(push_constant) uniform Args {
	uint n_head, hd, n_split;
	uint off_out, off_part;
} pc;

shared float w[XPU_ATT_MAX_SPLITS];
shared float msh;

void main()
{
	uint g = xpu_group(), t = gl_LocalInvocationID.x, hd = pc.hd, ns = pc.n_split, stride = hd + 2u;
	if (g >= pc.n_head)
		return;
	uint base = pc.off_part / 4u + g * ns * stride;
	if (t == 0u) {
		float m = ATT_NEG_INF;
		for (uint s = 0u; s < ns; s++)
			m = att_max(m, part[base + s * stride]);
		msh = m;
	}
	barrier();
	for (uint s = t; s < ns; s += XPU_ATT_BLOCK) {
		precise float x = part[base + s * stride] - msh;
		w[s] = xm_exp(x);
	}
	barrier();
	precise float l = 0.0;
	for (uint s = 0u; s < ns; s++)
		l = l + part[base + s * stride + 1u] * w[s];
	float inv = xm_div(1.0, l);
	for (uint d = t; d < hd; d += XPU_ATT_BLOCK) {
		precise float o = 0.0;
		for (uint s = 0u; s < ns; s++)
			o = o + part[base + s * stride + 2u + d] * w[s];
		precise float y = o * inv;
		outv[pc.off_out / 4u + g * hd + d] = y;
	}
}
