/* fdiv.glsl — correctly rounded f32 division (round to nearest, ties to even) in integer
 * arithmetic. Vulkan lets OpFDiv be 2.5 ulp off, and the q8_K pack divides twice, so a
 * device that rounds its division differently from the host would pack other bytes. */
#ifndef XPU_FDIV_GLSL
#define XPU_FDIV_GLSL

/* a positive finite float as m * 2^(e - 150), m in [2^23, 2^24) */
void fdiv_split(uint bits, out uint m, out int e)
{
	e = int(bits >> 23);
	m = bits & 0x7fffffu;
	if (e == 0) {
		int s = 23 - findMSB(m);
		m <<= uint(s);
		e = 1 - s;
	} else {
		m |= 0x800000u;
	}
}

/* a / b for positive finite a and b (subnormals included); overflow gives infinity. */
float fdiv_rn(float a, float b)
{
	uint ma, mb;
	int ea, eb;
	fdiv_split(floatBitsToUint(a), ma, ea);
	fdiv_split(floatBitsToUint(b), mb, eb);
	int e = ea - eb + 127; /* biased exponent of a quotient in [1, 2) */
	if (ma < mb) {
		ma <<= 1;
		e -= 1;
	}
	/* q = floor(ma * 2^24 / mb): 25 bits, the leading one first; r says what is left */
	uint q = 0u, r = ma;
	for (int i = 0; i < 25; i++) {
		q <<= 1;
		if (r >= mb) {
			r -= mb;
			q |= 1u;
		}
		r <<= 1;
	}
	bool sticky = r != 0u;
	if (e >= 1) {
		uint m = q >> 1;
		if ((q & 1u) != 0u && (sticky || (m & 1u) != 0u))
			m++;
		if (m == 0x1000000u) {
			m >>= 1;
			e++;
		}
		if (e >= 255)
			return uintBitsToFloat(0x7f800000u);
		return uintBitsToFloat((uint(e) << 23) | (m & 0x7fffffu));
	}
	/* subnormal: the mantissa is q >> (2 - e); a carry into bit 23 makes the smallest normal */
	uint sh = uint(2 - e);
	if (sh >= 26u)
		return 0.0;
	uint m = q >> sh, half_bit = (q >> (sh - 1u)) & 1u;
	sticky = sticky || (q & ((1u << (sh - 1u)) - 1u)) != 0u;
	if (half_bit != 0u && (sticky || (m & 1u) != 0u))
		m++;
	return uintBitsToFloat(m);
}

#endif
