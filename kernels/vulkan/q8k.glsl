/* q8k.glsl — the per-value steps of the q8_K activation pack (docs/ARITHMETIC.md), shared by
 * q8k_pack and swiglu_q8k so both round every value the host's way (src/quant/q8k.c). */
#ifndef XPU_Q8K_GLSL
#define XPU_Q8K_GLSL

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
