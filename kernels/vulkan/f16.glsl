/* f16.glsl — f32 bits to f16 bits, integer work only (src/quant/f16.h's rounding): to
 * nearest, ties to even; overflow to infinity; a NaN quiet, the payload's top bits kept. It
 * takes the bits, not a float, so a NaN reaches it as it was stored. */
#ifndef XPU_F16_GLSL
#define XPU_F16_GLSL

uint xpu_f16_bits(uint u)
{
	uint sign = (u >> 16) & 0x8000u, e8 = (u >> 23) & 0xffu, man = u & 0x7fffffu;
	if (e8 == 0xffu)
		return sign | 0x7c00u | (man != 0u ? 0x200u | (man >> 13) : 0u);
	int e = int(e8) - 112;
	if (e >= 31)
		return sign | 0x7c00u;
	if (e <= 0) { /* a subnormal half, or zero */
		if (e < -10)
			return sign;
		uint m = man | 0x800000u, shift = uint(14 - e);
		uint q = m >> shift, rem = m & ((1u << shift) - 1u), half_ = 1u << (shift - 1u);
		if (rem > half_ || (rem == half_ && (q & 1u) != 0u))
			q++;
		return sign | q;
	}
	uint q = (uint(e) << 10) | (man >> 13), rem = man & 0x1fffu;
	if (rem > 0x1000u || (rem == 0x1000u && (q & 1u) != 0u))
		q++;
	return sign | q;
}

#endif
