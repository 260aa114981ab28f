/* q8k_block.glsl — a workgroup of XPU_NORM_BLOCK lanes packing one q8_K block, lane t holding
 * element t: amax the workgroup max of |v| (NaN left out), then q8k.glsl's steps, the bytes of
 * q8k_pack. Shared by rms_norm_q8k, add_rms_norm_q8k[_f32] and the MoE tail's next norm
 * (matvec.glsl under TAIL_NORM). The includer declares the output buffer `xq` (uint words)
 * first; every lane of the group calls q8k_block_pack at the same point. */
#ifndef XPU_Q8K_BLOCK_GLSL
#define XPU_Q8K_BLOCK_GLSL

#include "norm.glsl"
#include "q8k.glsl"

shared int qs[XPU_NORM_BLOCK];

/* Word t (0 .. 79) of a block whose values' q are in qs: four q bytes, a sum, d, or zero. */
uint block_word(uint t, uint amax_bits)
{
	if (t < 64u)
		return (uint(qs[4u * t]) & 255u) | ((uint(qs[4u * t + 1u]) & 255u) << 8) |
		       ((uint(qs[4u * t + 2u]) & 255u) << 16) | (uint(qs[4u * t + 3u]) << 24);
	if (t < 72u) {
		int s = 0;
		for (uint i = 0u; i < 32u; i++)
			s += qs[32u * (t - 64u) + i];
		return uint(s);
	}
	return t == 72u ? floatBitsToUint(q8k_d(amax_bits)) : 0u;
}

/* Lane t's value v of the block whose first word is xq[oi]. */
void q8k_block_pack(uint oi, uint t, float v)
{
	uint a = floatBitsToUint(v) & 0x7fffffffu;
	uint amax = workgroup_reduce(XPU_WG_MAX, XPU_WG_I32, uvec2(a > 0x7f800000u ? 0u : a, 0u)).x;
	if (amax == 0u) { /* the same for every lane */
		if (t < 80u)
			xq[oi + t] = 0u;
		return;
	}
	qs[t] = q8k_round(scaled(floatBitsToUint(v), q8k_iscale(amax)));
	barrier();
	if (t < 80u)
		xq[oi + t] = block_word(t, amax);
	/* the next block's reduce ends every read of qs before its lanes write qs again */
}

#endif
