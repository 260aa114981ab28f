#version 450
#extension GL_GOOGLE_include_directive : require
/* kv_write — kc:buf@4! vc:buf@4! k:buf@4 v:buf@4 pos:buf@4 tokens n_kv_head hd slots
 * (src/ops/layer/kv_write.c; kernels/cpu/kv_write.c is the same rounding): one invocation a
 * word of the tokens' f32 rows, its two halves (hd is even) rounded from the bits and stored
 * as one word at the position's slot, (pos[0] % slots + t) % slots, of both caches. */
#include "xpu_vk.glsl"
#include "f16.glsl"

layout(std430, set = 0, binding = 0) writeonly buffer KC { uint kc[]; };
layout(std430, set = 0, binding = 1) writeonly buffer VC { uint vc[]; };
layout(std430, set = 0, binding = 2) readonly buffer K { uint kr[]; };
layout(std430, set = 0, binding = 3) readonly buffer V { uint vr[]; };
layout(std430, set = 0, binding = 4) readonly buffer P { uint ps[]; };
layout(push_constant) uniform Args {
	uint tokens, n_kv_head, hd, slots;
	uint off_kc, off_vc, off_k, off_v, off_pos;
} pc;

void main()
{
	uint half_hd = pc.hd / 2u, row = pc.n_kv_head * half_hd, words = pc.tokens * row;
	uint s0 = ps[pc.off_pos / 4u] % pc.slots, stride = xpu_groups() * gl_WorkGroupSize.x;
	for (uint w = xpu_item(); w < words; w += stride) {
		uint t = w / row, h = w % row / half_hd, d2 = w % half_hd, slot = (s0 + t) % pc.slots;
		uint at = (h * pc.slots + slot) * half_hd + d2, i = 2u * w;
		kc[pc.off_kc / 4u + at] = xpu_f16_bits(kr[pc.off_k / 4u + i]) | (xpu_f16_bits(kr[pc.off_k / 4u + i + 1u]) << 16);
		vc[pc.off_vc / 4u + at] = xpu_f16_bits(vr[pc.off_v / 4u + i]) | (xpu_f16_bits(vr[pc.off_v / 4u + i + 1u]) << 16);
	}
}
