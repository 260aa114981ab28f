/* workgroup.glsl — the workgroup primitives for Vulkan kernels: reduce (add / max / min over
 * f32, i32, i64, every lane gets the result) and exclusive scan (i32, i64) in the one order
 * of kernels/workgroup.h, and the int64 wave verbs. A value is a uvec2 of bits (an f32 or an
 * i32 in .x; an i64 as (low, high) words, its arithmetic done on the words, so no shaderInt64
 * is needed); op and dtype are workgroup.h's codes.
 *
 * The waves are virtual: 32 consecutive invocations of a 1-D block of whole waves (the kernel
 * table's waves_max refuses any other block at launch), their lanes trading values through
 * shared memory, so the order and the bits are the same whatever the device's subgroup size
 * (lavapipe's 4 to 64 included). Every invocation of the group must make each call (the
 * barriers); each call ends with a barrier, so a call in a loop is safe. */
#ifndef XPU_WORKGROUP_GLSL
#define XPU_WORKGROUP_GLSL

#include "xpu_vk.glsl"
#include "../workgroup.h"

/* Two halves, alternated step by step, so one barrier a step is enough (matvec.glsl's from_xor). */
shared uvec2 wg_xch[2u * gl_WorkGroupSize.x];
shared uvec2 wg_part[XPU_WG_MAX_WAVES];

uint wg_me()
{
	return gl_LocalInvocationID.x;
}

uint wg_lane()
{
	return gl_LocalInvocationID.x % XPU_WG_WAVE;
}

bool wg_nan(uint bits)
{
	return (bits & 0x7fffffffu) > 0x7f800000u;
}

uvec2 wg_identity(uint op, uint dt)
{
	if (op == XPU_WG_ADD)
		return uvec2(0u);
	if (dt == XPU_WG_F32)
		return uvec2(op == XPU_WG_MAX ? 0xff800000u : 0x7f800000u, 0u);
	if (dt == XPU_WG_I32)
		return uvec2(op == XPU_WG_MAX ? 0x80000000u : 0x7fffffffu, 0u);
	return op == XPU_WG_MAX ? uvec2(0u, 0x80000000u) : uvec2(0xffffffffu, 0x7fffffffu);
}

/* Whether b comes before a in the order op picks by (b > a for max, b < a for min). */
bool wg_takes_b(uint op, bool b_greater, bool b_less)
{
	return op == XPU_WG_MAX ? b_greater : b_less;
}

uvec2 wg_op_f32(uint op, uvec2 a, uvec2 b)
{
	if (op == XPU_WG_ADD) {
		precise float s = uintBitsToFloat(a.x) + uintBitsToFloat(b.x);
		return uvec2(floatBitsToUint(s), 0u);
	}
	if (wg_nan(a.x))
		return a;
	if (wg_nan(b.x))
		return b;
	float fa = uintBitsToFloat(a.x), fb = uintBitsToFloat(b.x);
	return wg_takes_b(op, fb > fa, fb < fa) ? b : a;
}

uvec2 wg_op_i64(uint op, uvec2 a, uvec2 b)
{
	if (op == XPU_WG_ADD) {
		uint carry;
		uint lo = uaddCarry(a.x, b.x, carry);
		return uvec2(lo, a.y + b.y + carry);
	}
	bool gt = int(b.y) > int(a.y) || (b.y == a.y && b.x > a.x);
	bool lt = int(b.y) < int(a.y) || (b.y == a.y && b.x < a.x);
	return wg_takes_b(op, gt, lt) ? b : a;
}

/* op(a, b), a first in the order. */
uvec2 wg_op(uint op, uint dt, uvec2 a, uvec2 b)
{
	if (dt == XPU_WG_F32)
		return wg_op_f32(op, a, b);
	if (dt == XPU_WG_I64)
		return wg_op_i64(op, a, b);
	if (op == XPU_WG_ADD)
		return uvec2(a.x + b.x, 0u);
	int ia = int(a.x), ib = int(b.x);
	return wg_takes_b(op, ib > ia, ib < ia) ? b : a;
}

/* ---- one (virtual) wave ------------------------------------------------------------------ */

/* The butterfly off = 16 .. 1: lanes l and l ^ off both take op(lower lane's, upper lane's). */
uvec2 wg_wave_reduce(uint op, uint dt, uvec2 v)
{
	uint me = wg_me(), k = 0u;
	for (uint off = XPU_WG_WAVE / 2u; off >= 1u; off >>= 1, k++) {
		uint at = (k & 1u) * gl_WorkGroupSize.x;
		wg_xch[at + me] = v;
		barrier();
		uvec2 o = wg_xch[at + (me ^ off)];
		v = (me & off) != 0u ? wg_op(op, dt, o, v) : wg_op(op, dt, v, o);
	}
	barrier();
	return v;
}

/* The inclusive scan of the wave (Hillis-Steele, off = 1 .. 16). */
uvec2 wg_wave_scan(uint op, uint dt, uvec2 v)
{
	uint me = wg_me(), lane = wg_lane(), k = 0u;
	for (uint off = 1u; off < XPU_WG_WAVE; off <<= 1, k++) {
		uint at = (k & 1u) * gl_WorkGroupSize.x;
		wg_xch[at + me] = v;
		barrier();
		if (lane >= off)
			v = wg_op(op, dt, wg_xch[at + me - off], v);
	}
	barrier();
	return v;
}

/* Lane src's v (src 0 .. 31 of this wave). */
uvec2 wg_wave_shuffle(uvec2 v, uint src)
{
	uint me = wg_me();
	wg_xch[me] = v;
	barrier();
	uvec2 got = wg_xch[(me & ~(XPU_WG_WAVE - 1u)) | (src % XPU_WG_WAVE)];
	barrier();
	return got;
}

/* The int64 wave verbs, exact: the sum in every lane, lane l's sum of lanes 0 .. l, lane
 * src's value. */
uvec2 wave_reduce_sum_i64(uvec2 v)
{
	return wg_wave_reduce(XPU_WG_ADD, XPU_WG_I64, v);
}

uvec2 wave_prefix_sum_i64(uvec2 v)
{
	return wg_wave_scan(XPU_WG_ADD, XPU_WG_I64, v);
}

uvec2 wave_shuffle_i64(uvec2 v, uint src)
{
	return wg_wave_shuffle(v, src);
}

/* ---- the workgroup ----------------------------------------------------------------------- */

/* Every invocation gets op over the block, in workgroup.h's order. */
uvec2 workgroup_reduce(uint op, uint dt, uvec2 v)
{
	uint me = wg_me(), waves = gl_WorkGroupSize.x / XPU_WG_WAVE;
	v = wg_wave_reduce(op, dt, v);
	if (wg_lane() == 0u)
		wg_part[me / XPU_WG_WAVE] = v;
	barrier();
	uvec2 r = wg_part[0];
	for (uint w = 1u; w < waves; w++)
		r = wg_op(op, dt, r, wg_part[w]);
	barrier(); /* the next call may write wg_part only once every invocation has read it */
	return r;
}

/* Each invocation's exclusive op over the ones before it (the identity in the first). */
uvec2 workgroup_scan(uint op, uint dt, uvec2 v)
{
	uint me = wg_me(), lane = wg_lane(), w = me / XPU_WG_WAVE;
	uvec2 id = wg_identity(op, dt);
	uvec2 incl = wg_wave_scan(op, dt, v);
	uvec2 excl = wg_wave_shuffle(incl, lane == 0u ? 0u : lane - 1u);
	if (lane == 0u)
		excl = id;
	if (lane == XPU_WG_WAVE - 1u)
		wg_part[w] = incl;
	barrier();
	uvec2 pre = id;
	for (uint i = 0u; i < w; i++)
		pre = wg_op(op, dt, pre, wg_part[i]);
	barrier();
	return wg_op(op, dt, pre, excl);
}

#endif
