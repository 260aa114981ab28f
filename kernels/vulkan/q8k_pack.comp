#version 450
#extension GL_GOOGLE_include_directive : require
/* q8k_pack — xq:buf@4! x:buf@4 n:u32. Workgroup g packs q8_K block g of n / 256 as
 * docs/ARITHMETIC.md says: amax = max |x| (NaN never counts), iscale = 127 / amax,
 * q = clamp(round_half_even(x * iscale)), eight sums, d = amax / 127, a zero tail. The
 * divisions are correctly rounded (fdiv.glsl) and the products never fused. */
#include "xpu_vk.glsl"
#include "q8k.glsl"

layout(std430, set = 0, binding = 0) writeonly buffer Xq { uint xq[]; };
layout(std430, set = 0, binding = 1) readonly buffer X { uint xf[]; };
layout(push_constant) uniform Args {
	uint n;
	uint off_xq, off_x;
} pc;

shared uint amax_bits;
shared int sums[8];

/* The largest |x| of the block, compared as bits: for non-negative floats (infinity
 * included) the integer order is the float order, and NaNs are left out. */
uint block_amax(uint xi, uint t)
{
	if (t == 0u)
		amax_bits = 0u;
	for (uint i = t; i < 8u; i += WG_SIZE)
		sums[i] = 0;
	barrier();
	uint m = 0u;
	for (uint i = t; i < 256u; i += WG_SIZE) {
		uint a = xf[xi + i] & 0x7fffffffu;
		if (a <= 0x7f800000u)
			m = max(m, a);
	}
	atomicMax(amax_bits, m);
	barrier();
	return amax_bits;
}

void main()
{
	uint g = xpu_group(), t = xpu_thread();
	if (g >= pc.n / 256u)
		return;
	uint xi = pc.off_x / 4u + g * 256u, oi = pc.off_xq / 4u + g * 80u;
	uint ab = block_amax(xi, t);
	if (ab == 0u) {
		for (uint i = t; i < 80u; i += WG_SIZE)
			xq[oi + i] = 0u;
		return;
	}
	float iscale = q8k_iscale(ab);
	for (uint w = t; w < 64u; w += WG_SIZE) {
		uint word = 0u;
		int part = 0;
		for (uint e = 0u; e < 4u; e++) {
			int q = q8k_round(scaled(xf[xi + 4u * w + e], iscale));
			word |= (uint(q) & 255u) << (8u * e);
			part += q;
		}
		xq[oi + w] = word;
		atomicAdd(sums[w / 8u], part);
	}
	barrier();
	for (uint i = t; i < 16u; i += WG_SIZE) {
		uint v = 0u;
		if (i < 8u)
			v = uint(sums[i]);
		else if (i == 8u)
			v = floatBitsToUint(q8k_d(ab));
		xq[oi + 64u + i] = v;
	}
}
