#version 450
#extension GL_GOOGLE_include_directive : require
/* swiglu_q8k — xq:buf@4! g:buf@4 u:buf@4 n:u32 (src/ops/layer/elementwise.c): workgroup b
 * packs q8_K block b of swiglu's f32 values v = silu(g) * u (swiglu.comp's ew_elem), exactly as
 * q8k_pack packs them: amax = max |v| (NaN never counts), iscale = 127 / amax, q = clamp(
 * round_half_even(v * iscale)), eight sums, d = amax / 127, a zero tail. */
#include "elementwise.glsl"
#include "q8k.glsl"

layout(push_constant) uniform Args {
	uint n;
	uint off_xq, off_g, off_u;
} pc;

shared uint vals[256];
shared uint amax_bits;
shared int sums[8];

float ew_elem(uint i)
{
	float act = xm_silu(ew_load1(pc.off_g, XPU_EW_F32, i));
	precise float v = act * ew_load2(pc.off_u, XPU_EW_F32, i);
	return v;
}

/* The block's values into vals and their largest |v|, compared as bits (q8k_pack's way). */
uint block_values(uint first, uint t)
{
	if (t == 0u)
		amax_bits = 0u;
	for (uint i = t; i < 8u; i += WG_SIZE)
		sums[i] = 0;
	barrier();
	uint m = 0u;
	for (uint i = t; i < 256u; i += WG_SIZE) {
		uint b = floatBitsToUint(ew_elem(first + i)), a = b & 0x7fffffffu;
		vals[i] = b;
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
	uint oi = pc.off_xq / 4u + g * 80u;
	uint ab = block_values(g * 256u, t);
	if (ab == 0u) {
		for (uint i = t; i < 80u; i += WG_SIZE)
			ew_out[oi + i] = 0u;
		return;
	}
	float amax = uintBitsToFloat(ab);
	bool inf = ab == 0x7f800000u;
	float iscale = inf ? 0.0 : fdiv_rn(127.0, amax);
	for (uint w = t; w < 64u; w += WG_SIZE) {
		uint word = 0u;
		int part = 0;
		for (uint e = 0u; e < 4u; e++) {
			int q = q8k_round(scaled(vals[4u * w + e], iscale));
			word |= (uint(q) & 255u) << (8u * e);
			part += q;
		}
		ew_out[oi + w] = word;
		atomicAdd(sums[w / 8u], part);
	}
	barrier();
	for (uint i = t; i < 16u; i += WG_SIZE) {
		uint v = 0u;
		if (i < 8u)
			v = uint(sums[i]);
		else if (i == 8u)
			v = floatBitsToUint(inf ? amax : fdiv_rn(amax, 127.0));
		ew_out[oi + 64u + i] = v;
	}
}
