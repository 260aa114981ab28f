/* elementwise.glsl — what the elementwise layer kernels (add, mul, swiglu, geglu, rope:
 * src/ops/layer/elementwise.c) share on Vulkan: their three bindings as words, f16 and f32
 * element loads, a bit-exact f32 -> f16 round to nearest even, and the grid-stride loop that
 * stores every element of out. A kernel defines ew_elem(i), element i's f32 result, and calls
 * ew_run. f16 elements go two to a word, one invocation a word, so no two invocations write
 * the same word; an odd count's last word keeps the half past the end as it was. */
#ifndef XPU_ELEMENTWISE_GLSL
#define XPU_ELEMENTWISE_GLSL

#include "xpu_vk.glsl"
#include "fdiv.glsl"
#include "../xmath.h"
#include "../elementwise.h"

layout(std430, set = 0, binding = 0) buffer Out { uint ew_out[]; };
layout(std430, set = 0, binding = 1) readonly buffer In1 { uint ew_in1[]; };
layout(std430, set = 0, binding = 2) readonly buffer In2 { uint ew_in2[]; };

float ew_elem(uint i);

float ew_half(uint word, uint i)
{
	return xpu_f16((i & 1u) != 0u ? word >> 16 : word & 0xffffu);
}

/* Element i of binding 1 or 2 (the view at byte offset off), as f32. */
float ew_load1(uint off, uint dtype, uint i)
{
	if (dtype == XPU_EW_F16)
		return ew_half(ew_in1[off / 4u + (i >> 1)], i);
	return uintBitsToFloat(ew_in1[off / 4u + i]);
}

float ew_load2(uint off, uint dtype, uint i)
{
	if (dtype == XPU_EW_F16)
		return ew_half(ew_in2[off / 4u + (i >> 1)], i);
	return uintBitsToFloat(ew_in2[off / 4u + i]);
}

/* f32 -> f16 bits, to nearest, ties to even; overflow to infinity, NaN quiet (src/quant/f16.h). */
uint ew_f16_bits(float f)
{
	uint u = floatBitsToUint(f);
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

/* Every element i < n of out (at byte offset off_out), in a grid-stride loop over words. */
void ew_run(uint n, uint dtype, uint off_out)
{
	uint at = off_out / 4u, stride = xpu_groups() * gl_WorkGroupSize.x;
	uint words = dtype == XPU_EW_F16 ? n / 2u + (n & 1u) : n;
	for (uint w = xpu_item(); w < words; w += stride) {
		if (dtype != XPU_EW_F16) {
			ew_out[at + w] = floatBitsToUint(ew_elem(w));
			continue;
		}
		uint lo = ew_f16_bits(ew_elem(2u * w));
		uint hi = 2u * w + 1u < n ? ew_f16_bits(ew_elem(2u * w + 1u)) : ew_out[at + w] >> 16;
		ew_out[at + w] = lo | (hi << 16);
	}
}

#endif
