/* norm.glsl — what the row-normalisation kernels share (rms_norm, add_rms_norm, rms_norm_q8k,
 * layer_norm, softmax, norm_steps): the f32 workgroup reduces (workgroup.glsl's order) and the
 * two steps Vulkan does not round correctly, division (through fdiv.glsl) and square root
 * (below, in integer arithmetic), both with IEEE's answers for zeros, infinities and NaN, so
 * they equal the host's `/` and sqrtf bit for bit (NaN: some NaN). */
#ifndef XPU_NORM_GLSL
#define XPU_NORM_GLSL

#include "workgroup.glsl"
#include "fdiv.glsl"
#include "../norm.h"

/* ---- the reduces ------------------------------------------------------------------------- */

float nm_sum(float v)
{
	return uintBitsToFloat(workgroup_reduce(XPU_WG_ADD, XPU_WG_F32, uvec2(floatBitsToUint(v), 0u)).x);
}

float nm_max(float v)
{
	return uintBitsToFloat(workgroup_reduce(XPU_WG_MAX, XPU_WG_F32, uvec2(floatBitsToUint(v), 0u)).x);
}

/* workgroup.h's f32 max of a lane's running value and the next: a NaN is kept as it is. */
float nm_max_op(float a, float b)
{
	if (wg_nan(floatBitsToUint(a)))
		return a;
	if (wg_nan(floatBitsToUint(b)))
		return b;
	return b > a ? b : a;
}

/* ---- correctly rounded division and square root -------------------------------------------- */

const uint NM_INF = 0x7f800000u, NM_NAN = 0x7fc00000u;

/* a / b, rounded to nearest even, any a and b. */
float nm_div(float a, float b)
{
	uint ua = floatBitsToUint(a), ub = floatBitsToUint(b);
	uint sign = (ua ^ ub) & 0x80000000u, ma = ua & 0x7fffffffu, mb = ub & 0x7fffffffu;
	if (ma > NM_INF || mb > NM_INF || (ma == NM_INF && mb == NM_INF) || (ma == 0u && mb == 0u))
		return uintBitsToFloat(NM_NAN);
	if (ma == NM_INF || mb == 0u)
		return uintBitsToFloat(sign | NM_INF);
	if (mb == NM_INF || ma == 0u)
		return uintBitsToFloat(sign);
	return uintBitsToFloat(sign | floatBitsToUint(fdiv_rn(uintBitsToFloat(ma), uintBitsToFloat(mb))));
}

/* sqrt(v) rounded to nearest even. v = m 2^e (m in [2^23, 2^24), fdiv_split's form); M = m 2^s,
 * s = 25 or 26 so that e - s is even, lies in [2^48, 2^50), and q = floor(sqrt(M)), taken two
 * bits of M a step (the remainder stays under 2^26), has 25 bits: 24 of the result and the
 * one below, the remainder saying whether anything lies past it. */
float nm_sqrt(float v)
{
	uint u = floatBitsToUint(v);
	if ((u & 0x7fffffffu) > NM_INF || (u > 0x80000000u))
		return uintBitsToFloat(NM_NAN); /* NaN, or below zero */
	if (u == NM_INF || (u & 0x7fffffffu) == 0u)
		return v; /* +inf, +0, -0 */
	uint m;
	int e;
	fdiv_split(u, m, e);
	e -= 150;
	int s = ((e - 25) & 1) == 0 ? 25 : 26;
	uint mm = m << uint(s - 24); /* M = mm 2^24: its top 26 bits, then 24 zeros */
	uint r = 0u, q = 0u;
	for (int p = 24; p >= 0; p--) {
		uint pair = p >= 12 ? (mm >> uint(2 * (p - 12))) & 3u : 0u;
		r = (r << 2) | pair;
		uint t = (q << 2) | 1u;
		if (r >= t) {
			r -= t;
			q = (q << 1) | 1u;
		} else {
			q <<= 1;
		}
	}
	int ex = 151 + (e - s) / 2;
	uint mant = q >> 1;
	if ((q & 1u) != 0u && (r != 0u || (mant & 1u) != 0u))
		mant++;
	if (mant == 0x1000000u) {
		mant >>= 1;
		ex++;
	}
	return uintBitsToFloat((uint(ex) << 23) | (mant & 0x7fffffu));
}

/* 1 / sqrt(sum / n + eps), each of the four steps correctly rounded. */
float nm_inv_root(float sum, uint n, float eps)
{
	float mean = nm_div(sum, float(n));
	precise float v = mean + eps;
	return nm_div(1.0, nm_sqrt(v));
}

#endif
