/* f16.h — IEEE half <-> single conversion by bit manipulation: exact, round-to-nearest-even
 * on the way down, independent of the host's F16C or rounding mode. Uses only <stdint.h>. */
#ifndef XPU_F16_H
#define XPU_F16_H

#include <stdint.h>
#include <string.h>

static inline float xpu_bits_f32(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static inline uint32_t xpu_f32_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

/* Every half is exactly representable as a single, subnormals included. */
static inline float xpu_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f;
	uint32_t man = h & 0x3ff;
	if (exp == 0x1f) /* inf; NaN keeps its payload and comes out quiet, as F16C's does */
		return xpu_bits_f32(sign | 0x7f800000u | (man << 13) | (man ? 0x400000u : 0));
	if (exp != 0)
		return xpu_bits_f32(sign | ((exp + 112) << 23) | (man << 13));
	if (man == 0)
		return xpu_bits_f32(sign);
	/* subnormal: normalise the mantissa; the value is man * 2^-24 */
	int shift = 0;
	while (!(man & 0x400)) {
		man <<= 1;
		shift++;
	}
	return xpu_bits_f32(sign | ((uint32_t)(113 - shift) << 23) | ((man & 0x3ff) << 13));
}

/* Round to nearest, ties to even; overflow goes to inf, NaN stays NaN (quiet). */
static inline uint16_t xpu_f32_to_f16(float f)
{
	uint32_t u = xpu_f32_bits(f);
	uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
	uint32_t exp = (u >> 23) & 0xff;
	uint32_t man = u & 0x7fffff;
	if (exp == 0xff)
		return sign | 0x7c00 | (man ? (uint16_t)(0x200 | (man >> 13)) : 0);
	int32_t e = (int32_t)exp - 127 + 15;
	if (e >= 31)
		return sign | 0x7c00;
	if (e <= 0) {
		/* subnormal half (or zero): shift the full mantissa, round on the dropped bits */
		if (e < -10)
			return sign;
		uint32_t m = man | 0x800000;
		uint32_t shift = (uint32_t)(14 - e);
		uint32_t q = m >> shift;
		uint32_t rem = m & ((1u << shift) - 1);
		uint32_t half = 1u << (shift - 1);
		if (rem > half || (rem == half && (q & 1)))
			q++;
		return sign | (uint16_t)q; /* a carry into bit 10 is the smallest normal: correct */
	}
	uint32_t q = ((uint32_t)e << 10) | (man >> 13);
	uint32_t rem = man & 0x1fff;
	if (rem > 0x1000 || (rem == 0x1000 && (q & 1)))
		q++; /* a carry may reach the exponent, and past it to inf: both correct */
	return sign | (uint16_t)q;
}

#endif
