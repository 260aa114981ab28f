/* matvec_q5_0.glsl — q5_0's Wt, wt_load and wt_value for matvec.glsl: q4_0's lanes and the
 * fifth bits. */
#ifndef XPU_MATVEC_Q5_0_GLSL
#define XPU_MATVEC_Q5_0_GLSL

/* q4_0's lanes, one per block: the qh word (bit j: element j's fifth bit) and the nibble
 * words, 20 bytes on 4 only, so read as words; levels 0..31 offset by 16. */
struct Wt {
	uvec4 q;
	uint qh;
	uint d;
};

Wt wt_none()
{
	return Wt(uvec4(0u), 0u, 0u);
}

Wt wt_load(Row r, uint b, uint sub, bool vec)
{
	uint p = r.pay + PAYW * b;
	return Wt(wload4(p + 1u, false), w[p], scale16(r, b));
}

/* h's low four bits into bit 4 of four bytes (the multiply's four copies of h land 7 bits
 * apart, so nothing carries). */
uint fifth_bits(uint h)
{
	return (((h & 15u) * 0x00204081u) & 0x01010101u) << 4;
}

float wt_value(Wt t, Row r, uint b, uint sub, bool vec)
{
	uint xq = r.x0 + (b >> 3) * Q8K_WORDS, xa = xq + (b & 7u) * 8u;
	uvec4 a0 = xload4(xa, vec), a1 = xload4(xa + 4u, vec);
	int s = 0;
	[[unroll]] for (uint k = 0u; k < 4u; k++) {
		s += dot4((t.q[k] & LO4) | fifth_bits(t.qh >> (4u * k)), a0[k]);
		s += dot4(((t.q[k] >> 4) & LO4) | fifth_bits(t.qh >> (16u + 4u * k)), a1[k]);
	}
	s -= 16 * int(x[xq + 64u + (b & 7u)]); /* the levels' offset of 16, by the slice's sum */
	return value32(t.d, s, xq);
}

#endif
