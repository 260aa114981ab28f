#version 450
#extension GL_GOOGLE_include_directive : require
/* rope — out:buf@4! x:buf@4 pos:buf@4 tokens:u32 heads:u32 head_dim:u32 n_dims:u32 mode:u32
 * dtype:u32 lnb:f32 freq_scale:f32 (src/ops/layer/elementwise.c; kernels/cpu/elementwise.c's
 * rope_elem is the same arithmetic): element j of a head past n_dims is copied; below, the pair
 * (first, second) of index p turns by theta = (pos * freq_scale) * e^(p lnb). */
#include "elementwise.glsl"

layout(push_constant) uniform Args {
	uint tokens, heads, head_dim, n_dims, mode, dtype;
	float lnb, freq_scale;
	uint off_out, off_x, off_pos;
} pc;

float ew_elem(uint i)
{
	uint j = i % pc.head_dim, half_ = pc.n_dims / 2u, p, partner;
	float x = ew_load1(pc.off_x, pc.dtype, i);
	if (j >= pc.n_dims)
		return x;
	bool first;
	if (pc.mode == XPU_ROPE_NEOX) {
		first = j < half_;
		p = first ? j : j - half_;
		partner = first ? i + half_ : i - half_;
	} else {
		first = (j & 1u) == 0u;
		p = j / 2u;
		partner = first ? i + 1u : i - 1u;
	}
	float y = ew_load1(pc.off_x, pc.dtype, partner);
	int pos = int(ew_in2[pc.off_pos / 4u + i / (pc.heads * pc.head_dim)]);
	precise float theta = (float(pos) * pc.freq_scale) * xm_exp(float(p) * pc.lnb);
	float c = xm_cos(theta), s = xm_sin(theta);
	precise float v;
	if (first)
		v = x * c - y * s;
	else
		v = y * s + x * c;
	return v;
}

void main()
{
	ew_run(pc.tokens * pc.heads * pc.head_dim, pc.dtype, pc.off_out);
}
