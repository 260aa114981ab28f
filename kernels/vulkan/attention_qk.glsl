/* attention_qk.glsl — what attention_decode.glsl and attention_prefill.glsl share beside
 * attention.glsl: the q (f32), k and v (f16 pairs, one word each) buffers at bindings 1 .. 3,
 * and a score's dot product q . k over d in order, one f32 sum per element. */
#ifndef XPU_ATTENTION_QK_GLSL
#define XPU_ATTENTION_QK_GLSL

#include "attention.glsl"

layout(std430, set = 0, binding = 1) readonly buffer Q { float qs[]; };
layout(std430, set = 0, binding = 2) readonly buffer K { uint ks[]; };
layout(std430, set = 0, binding = 3) readonly buffer V { uint vs[]; };

/* q[qb ..] . the K row at word kw, hd wide, in d order */
float dot_row(uint qb, uint kw, uint hd)
{
	precise float acc = 0.0;
	for (uint d2 = 0u; d2 < hd / 2u; d2++) {
		uint w = ks[kw + d2];
		acc = acc + qs[qb + 2u * d2] * xpu_f16(w & 0xffffu);
		acc = acc + qs[qb + 2u * d2 + 1u] * xpu_f16(w >> 16);
	}
	return acc;
}

#endif
