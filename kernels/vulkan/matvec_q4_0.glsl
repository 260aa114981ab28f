/* matvec_q4_0.glsl — q4_0's and iq4_nl's Wt, wt_load and wt_value for matvec.glsl: one lane
 * per block; iq4_nl's levels by matvec_kv.glsl's lookup. */
#ifndef XPU_MATVEC_Q4_0_GLSL
#define XPU_MATVEC_Q4_0_GLSL

/* One lane per block, 16 payload bytes; block b reads slice b % 8 of q8_K block b / 8. */
struct Wt {
	uvec4 q;
	uint d;
};

#ifdef FMT_IQ4_NL
#include "matvec_kv.glsl"
#endif

Wt wt_none()
{
	return Wt(uvec4(0u), 0u);
}

Wt wt_load(Row r, uint b, uint sub, bool vec)
{
	return Wt(wload4(r.pay + PAYW * b, vec), scale16(r, b));
}

/* Low nibbles are elements 0..15 (against a0), high nibbles 16..31 (against a1). */
float wt_value(Wt t, Row r, uint b, uint sub, bool vec)
{
	uint xq = r.x0 + (b >> 3) * Q8K_WORDS, xa = xq + (b & 7u) * 8u;
	uvec4 a0 = xload4(xa, vec), a1 = xload4(xa + 4u, vec);
	int s = 0;
	[[unroll]] for (uint k = 0u; k < 4u; k++) {
#ifdef FMT_Q4_0
		s += dot4(t.q[k] & LO4, a0[k]) + dot4((t.q[k] >> 4) & LO4, a1[k]);
#else
		s += kv_dot(t.q[k] & LO4, a0[k]) + kv_dot((t.q[k] >> 4) & LO4, a1[k]);
#endif
	}
#ifdef FMT_Q4_0
	s -= 8 * int(x[xq + 64u + (b & 7u)]); /* the nibbles' offset of 8, by the slice's sum */
#endif
	return value32(t.d, s, xq);
}

#endif
