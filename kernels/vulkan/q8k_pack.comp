#version 450
#extension GL_GOOGLE_include_directive : require
/* q8k_pack — xq:buf@4! x:buf@4 n:u32. Workgroup g packs q8_K block g of n / 256 as
 * docs/ARITHMETIC.md says: amax = max |x| (NaN never counts), iscale = 127 / amax,
 * q = clamp(round_half_even(x * iscale)), eight sums, d = amax / 127, a zero tail. The
 * divisions are correctly rounded (fdiv.glsl) and the products never fused. */
#include "xpu_vk.glsl"
#include "fdiv.glsl"

layout(std430, set = 0, binding = 0) writeonly buffer Xq { uint xq[]; };
layout(std430, set = 0, binding = 1) readonly buffer X { uint xf[]; };
layout(push_constant) uniform Args {
	uint n;
	uint off_xq, off_x;
} pc;

shared uint amax_bits;
shared int sums[8];

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
	float amax = uintBitsToFloat(ab);
	bool inf = ab == 0x7f800000u;
	float iscale = inf ? 0.0 : fdiv_rn(127.0, amax);
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
			v = floatBitsToUint(inf ? amax : fdiv_rn(amax, 127.0));
		xq[oi + 64u + i] = v;
	}
}
