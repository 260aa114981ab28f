/* attention_combine.glsl — the body of attention_combine, out:buf@4! part:buf@4 n_head:u32
 * hd:u32 n_split:u32, and (POS_BUF) of attention_combine_pos, out part pos:buf n_head hd n_max
 * window split slots (src/ops/layer/attention.c): group g folds query head g's decode partials
 * (m, l, acc) in split order: M = the max of m, w = exp(m - M), L = the sum of l w, O[d] = the
 * sum of acc[d] w, out = O * (1 / L), the reciprocal correctly rounded (xm_div).
 * kernels/cpu/attention.c. The _pos form folds pos[0]'s splits, n_max apart; a position the
 * launch cannot serve gives the quiet NaN 0x7fc00000 throughout. */
#include "attention.glsl"

layout(std430, set = 0, binding = 0) writeonly buffer Out { float outv[]; };
layout(std430, set = 0, binding = 1) readonly buffer Part { float part[]; };
#ifdef POS_BUF
layout(std430, set = 0, binding = 2) readonly buffer Pos { uint ps[]; };
layout(push_constant) uniform Args {
	uint n_head, hd, n_max, window, split, slots;
	uint off_out, off_part, off_pos;
} pc;
#else
layout(push_constant) uniform Args {
	uint n_head, hd, n_split;
	uint off_out, off_part;
} pc;
#endif

shared float w[XPU_ATT_MAX_SPLITS];
shared float msh;

void main()
{
	uint g = xpu_group(), t = gl_LocalInvocationID.x, hd = pc.hd, stride = hd + 2u;
	if (g >= pc.n_head)
		return;
#ifdef POS_BUF
	uint pos = ps[pc.off_pos / 4u];
	if (!att_pos_serves(pos, pc.window, pc.slots, pc.split, pc.n_max)) {
		for (uint d = t; d < hd; d += XPU_ATT_BLOCK)
			outv[pc.off_out / 4u + g * hd + d] = uintBitsToFloat(0x7fc00000u);
		return;
	}
	uint ns = pos / pc.split - att_lo(pos, pc.window) / pc.split + 1u, base = pc.off_part / 4u + g * pc.n_max * stride;
#else
	uint ns = pc.n_split, base = pc.off_part / 4u + g * ns * stride;
#endif
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
