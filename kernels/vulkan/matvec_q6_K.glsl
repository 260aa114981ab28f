/* matvec_q6_K.glsl — q6_K's Wt, wt_load and wt_value for matvec.glsl: eight lanes per
 * block. */
#ifndef XPU_MATVEC_Q6_K_GLSL
#define XPU_MATVEC_Q6_K_GLSL

/* q6_K: eight lanes per block; lane p = 4h + 2c + m takes half h's ql words 16h + 8c + 4m ..
 * + 3 (one 16-byte load where VEC allows): byte l' = 16m + 4j + i of them is ql[64h + 32c +
 * l'], whose low nibble is element 128h + 32c + l' (group s = c) and high nibble element
 * 128h + 32(c + 2) + l' (group c + 2), with their top bits in qh[32h + l'] (qh words 32 + 8h +
 * 4m.., bits 2s, 2s + 1). A lane's two groups have one scale each: sc[8h + m + 2s], byte m + 2c
 * of scale words 2h and 2h + 1; their activations are 16 consecutive bytes each. Values are
 * q - 32, packed as signed bytes. The 208-byte payload keeps every 16-byte piece on 16 bytes
 * when the row's payloads start there. */
struct Wt {
	uvec4 ql;
	uvec4 qh;
	uvec2 sc; /* scale words 2h, 2h + 1 (a vector indexed by h would sit in local memory) */
	uint d;
};

Wt wt_none()
{
	return Wt(uvec4(0u), uvec4(0u), uvec2(0u), 0u);
}

Wt wt_load(Row r, uint b, uint sub, bool vec)
{
	uint blk = r.pay + PAYW * b, h = sub >> 2, m = sub & 1u, sc = blk + 48u + 2u * h;
	return Wt(wload4(blk + 4u * sub, vec), wload4(blk + 32u + 8u * h + 4u * m, vec), uvec2(w[sc], w[sc + 1u]),
		  scale16(r, b));
}

/* bytewise q - 32 with no borrow between bytes: (q + 128 - 32) ^ 128 */
uint q6_signed(uint q)
{
	return ((q | 0x80808080u) - 0x20202020u) ^ 0x80808080u;
}

float wt_value(Wt t, Row r, uint b, uint sub, bool vec)
{
	uint h = sub >> 2, c = (sub >> 1) & 1u, m = sub & 1u;
	uint xa = r.x0 + b * Q8K_WORDS + 32u * h + 8u * c + 4u * m;
	uvec4 alo = xload4(xa, vec), ahi = xload4(xa + 16u, vec);
	int slo = 0, shi = 0;
	[[unroll]] for (uint j = 0u; j < 4u; j++) {
		uint q = t.ql[j], qh = t.qh[j];
		slo += dot4(q6_signed((q & LO4) | ((qh << (4u - 2u * c)) & 0x30303030u)), alo[j]);
		shi += dot4(q6_signed(((q >> 4) & LO4) | ((qh >> (2u * c)) & 0x30303030u)), ahi[j]);
	}
	int sl = bitfieldExtract(int(t.sc.x), int(8u * (m + 2u * c)), 8);
	int sh = bitfieldExtract(int(t.sc.y), int(8u * (m + 2u * c)), 8);
	return value32(t.d, group_sum(sl * slo + sh * shi), r.x0 + b * Q8K_WORDS);
}

#endif
