/* select.glsl — what the selection kernels' Vulkan bodies share (kernels/select.h's codes):
 * the order key of argmax and top_k as an i64 of workgroup.glsl (uvec2: low, high words),
 * an exact f16 conversion that treats NaN as the host does (kernels/cpu/select.c through
 * src/quant/f16.h: quiet, payload kept), and the f32 bit tests. */
#ifndef XPU_SELECT_GLSL
#define XPU_SELECT_GLSL

#include "workgroup.glsl"
#include "../select.h"

bool sel_nan_bits(uint u)
{
	return (u & 0x7fffffffu) > 0x7f800000u;
}

/* A value's place in the order, as an unsigned word: NaN above +inf, -0 equal to +0. */
uint sel_order(uint u)
{
	if (sel_nan_bits(u))
		return 0xffffffffu;
	if (u == 0x80000000u)
		u = 0u;
	return (u & 0x80000000u) != 0u ? ~u : u | 0x80000000u;
}

/* The key (place, then the lower index) as an i64 whose signed max picks the element first
 * chosen: the high word is the place with its top bit flipped, the low word 2^32 - 1 - i. */
uvec2 sel_key(uint bits, uint i)
{
	return uvec2(0xffffffffu - i, sel_order(bits) ^ 0x80000000u);
}

uint sel_index(uvec2 key)
{
	return 0xffffffffu - key.x;
}

/* f16 bits to f32, exactly; a NaN comes out quiet with its payload, as on the host. */
float sel_f16(uint h)
{
	uint e = (h >> 10) & 31u, m = h & 1023u;
	float f = xpu_f16(h);
	if (e == 31u && m != 0u)
		f = uintBitsToFloat(floatBitsToUint(f) | 0x400000u);
	return f;
}

#endif
