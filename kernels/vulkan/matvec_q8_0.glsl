/* matvec_q8_0.glsl — q8_0's Wt, wt_load and wt_value for matvec.glsl: one or two lanes per
 * block (G). */
#ifndef XPU_MATVEC_Q8_0_GLSL
#define XPU_MATVEC_Q8_0_GLSL

/* G = 2: two lanes per 32-byte payload, 16 bytes each (q), so consecutive lanes read
 * consecutive bytes; the halves' integer dots meet in both lanes. G = 1: one lane reads all
 * 32 (q, q1). */
struct Wt {
	uvec4 q, q1;
	uint d;
};

Wt wt_none()
{
	return Wt(uvec4(0u), uvec4(0u), 0u);
}

Wt wt_load(Row r, uint b, uint sub, bool vec)
{
	uint p = r.pay + PAYW * b;
	if (G == 1u)
		return Wt(wload4(p, vec), wload4(p + 4u, vec), scale16(r, b));
	return Wt(wload4(p + 4u * sub, vec), uvec4(0u), scale16(r, b));
}

float wt_value(Wt t, Row r, uint b, uint sub, bool vec)
{
	uint xq = r.x0 + (b >> 3) * Q8K_WORDS, xa = xq + (b & 7u) * 8u + 4u * sub;
	uvec4 a = xload4(xa, vec);
	int s = dot4(t.q.x, a.x) + dot4(t.q.y, a.y) + dot4(t.q.z, a.z) + dot4(t.q.w, a.w);
	if (G == 1u) {
		uvec4 a1 = xload4(xa + 4u, vec);
		s += dot4(t.q1.x, a1.x) + dot4(t.q1.y, a1.y) + dot4(t.q1.z, a1.z) + dot4(t.q1.w, a1.w);
	}
	return value32(t.d, group_sum(s), xq);
}

#endif
