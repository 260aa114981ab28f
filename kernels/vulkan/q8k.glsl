/* q8k.glsl — the q8_K pack's steps (docs/ARITHMETIC.md, "q8_K activation block") as the host
 * takes them, shared by q8k_pack and rms_norm_q8k so the two pack the same bytes: the scales
 * from amax (correctly rounded divisions), x * iscale, the rounding. */
#ifndef XPU_Q8K_GLSL
#define XPU_Q8K_GLSL

#include "fdiv.glsl"

/* iscale = 127 / amax for a block's amax (its bits; not 0): 0 where amax is infinite. */
float q8k_iscale(uint amax_bits)
{
	return amax_bits == 0x7f800000u ? 0.0 : fdiv_rn(127.0, uintBitsToFloat(amax_bits));
}

/* d = amax / 127 (amax not 0): infinite where amax is. */
float q8k_d(uint amax_bits)
{
	float amax = uintBitsToFloat(amax_bits);
	return amax_bits == 0x7f800000u ? amax : fdiv_rn(amax, 127.0);
}

/* x * iscale as the host computes it. A subnormal x is rebuilt as its integer mantissa
 * times iscale * 2^-149 (exact while that stays normal; when it does not, the product is
 * under 2^-103 and rounds to 0), so a device that flushes subnormal inputs agrees. An
 * infinite iscale (amax under 127 / FLT_MAX) makes every non-zero x infinite. */
float scaled(uint xb, float iscale)
{
	if ((xb & 0x7f800000u) != 0u) {
		precise float v = uintBitsToFloat(xb) * iscale;
		return v;
	}
	uint ib = floatBitsToUint(iscale);
	if ((ib >> 23) <= 149u || (xb & 0x7fffffu) == 0u)
		return 0.0;
	if (ib >= 0x7f800000u)
		return uintBitsToFloat((xb & 0x80000000u) | 0x7f800000u);
	float m = float(xb & 0x7fffffu);
	precise float v = ((xb >> 31) != 0u ? -m : m) * uintBitsToFloat(ib - (149u << 23));
	return v;
}

/* round half to even, clamped to [-127, 127]; NaN gives 0 (the host's q8k_round) */
int q8k_round(float v)
{
	if ((floatBitsToUint(v) & 0x7fffffffu) > 0x7f800000u)
		return 0;
	if (v >= 127.0)
		return 127;
	if (v <= -127.0)
		return -127;
	return int(roundEven(v));
}

#endif
