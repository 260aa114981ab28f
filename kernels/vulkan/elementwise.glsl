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
#include "f16.glsl"
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

/* f32 -> f16 bits, to nearest, ties to even; overflow to infinity, NaN quiet (f16.glsl). */
uint ew_f16_bits(float f)
{
	return xpu_f16_bits(floatBitsToUint(f));
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
