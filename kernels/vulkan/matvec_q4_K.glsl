/* matvec_q4_K.glsl — q4_K's and q5_K's Wt, wt_load and wt_value for matvec.glsl: eight lanes
 * per block, the packed 6-bit scales and mins. */
#ifndef XPU_MATVEC_Q4_K_GLSL
#define XPU_MATVEC_Q4_K_GLSL

/* Eight lanes per block. Lane p = 2k + m reads qs words 8k + 4m .. + 3, bytes 32k + l with
 * l = 16m ..16m + 15: their low nibbles are elements 64k + l (sub-block 2k), their high
 * nibbles 64k + 32 + l (sub-block 2k + 1), each against 16 consecutive activation bytes.
 * Lane p also takes sub-block p's min term. All eight read the block's 16-byte head (d, dmin,
 * the 12 scale bytes). Where VEC allows, the nibbles and the head are one 16-byte load each
 * (no row prefix: the 144-byte blocks, nine 16-byte words, keep both on 16 bytes).
 * q5_K: the same, its 176-byte blocks eleven 16-byte words; lane p = 2k + m also reads qh
 * bytes 16m .. + 15 (qh words 4 + 4m ..), whose bits 2k and 2k + 1 are the fifth bits of its
 * elements of sub-blocks 2k and 2k + 1; its nibbles sit past qh (words 12 + 4p ..). */
struct Wt {
	uvec4 qs;
#ifdef FMT_Q5_K
	uvec4 qh;
#endif
	uvec3 sc;
	uint dm; /* d, dmin as f16 */
};

#ifdef FMT_Q5_K
Wt wt_none()
{
	return Wt(uvec4(0u), uvec4(0u), uvec3(0u), 0u);
}

Wt wt_load(Row r, uint b, uint sub, bool vec)
{
	uint blk = r.pay + PAYW * b;
	uvec4 head = wload4(blk, vec);
	return Wt(wload4(blk + 12u + 4u * sub, vec), wload4(blk + 4u + 4u * (sub & 1u), vec), head.yzw, head.x);
}
#else
Wt wt_none()
{
	return Wt(uvec4(0u), uvec3(0u), 0u);
}

Wt wt_load(Row r, uint b, uint sub, bool vec)
{
	uint blk = r.pay + PAYW * b;
	uvec4 head = wload4(blk, vec);
	return Wt(wload4(blk + 4u + 4u * sub, vec), head.yzw, head.x);
}
#endif

uint byte_of(uint v, uint i)
{
	return (v >> (8u * i)) & 255u;
}

float wt_value(Wt t, Row r, uint b, uint sub, bool vec)
{
	uint xq = r.x0 + b * Q8K_WORDS, k = sub >> 1, xa = xq + 16u * k + 4u * (sub & 1u);
	uvec4 alo = xload4(xa, vec), ahi = xload4(xa + 8u, vec);
	/* ggml's get_scale_min_k4, four bytes at a time: scales and mins of sub-blocks 0..3, 4..7 */
	uint sc_lo = t.sc.x & 0x3F3F3F3Fu, m_lo = t.sc.y & 0x3F3F3F3Fu;
	uint sc_hi = (t.sc.z & LO4) | ((t.sc.x >> 2) & 0x30303030u);
	uint m_hi = ((t.sc.z >> 4) & LO4) | ((t.sc.y >> 2) & 0x30303030u);
	int slo = 0, shi = 0;
	[[unroll]] for (uint j = 0u; j < 4u; j++) {
		uint lo = t.qs[j] & LO4, hi = (t.qs[j] >> 4) & LO4;
#ifdef FMT_Q5_K
		lo |= ((t.qh[j] >> (2u * k)) & 0x01010101u) << 4;
		hi |= ((t.qh[j] >> (2u * k + 1u)) & 0x01010101u) << 4;
#endif
		slo += dot4(lo, alo[j]);
		shi += dot4(hi, ahi[j]);
	}
	uint sw = k < 2u ? sc_lo : sc_hi;
	int isum = int(byte_of(sw, (2u * k) % 4u)) * slo + int(byte_of(sw, (2u * k + 1u) % 4u)) * shi;
	int msum = int(byte_of(mix(m_hi, m_lo, sub < 4u), sub % 4u)) * int(x[xq + 64u + sub]);
	isum = group_sum(isum);
	msum = group_sum(msum);
	vec2 dm = f16_pair(t.dm);
	float d = dm.x, dmin = dm.y, xs = act_scale(xq);
	precise float v = (d * xs) * float(isum) - (dmin * xs) * float(msum);
	return v;
}

#endif
