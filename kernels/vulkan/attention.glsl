/* attention.glsl — what the attention kernels share (attention_decode*, attention_combine,
 * attention_prefill*): the f16 K / V reads, which positions a query sees, workgroup.h's f32
 * max, and correctly rounded division (fdiv.glsl, through xmath.h's xm_div). HD, where a
 * kernel defines it nonzero, is the head width the kernel is built for. */
#ifndef XPU_ATTENTION_GLSL
#define XPU_ATTENTION_GLSL

#include "xpu_vk.glsl"
#include "fdiv.glsl"
#include "../attention.h"
#include "../xmath.h"

#ifndef HD
#define HD 0u
#endif

#define ATT_NEG_INF uintBitsToFloat(0xff800000u)

/* The oldest position a query at p sees. */
uint att_lo(uint p, uint window)
{
	return window != 0u && p + 1u > window ? p + 1u - window : 0u;
}

/* kernels/cpu/attention.c's pos_serves: a position read from a buffer that a _pos launch can
 * serve (it sees no position gone from the cache; its splits fit n_max). */
bool att_pos_serves(uint pos, uint window, uint slots, uint split, uint n_max)
{
	uint lo = att_lo(pos, window);
	return pos != 0xffffffffu && pos - lo < slots && pos / split - lo / split + 1u <= n_max;
}

/* workgroup.h's f32 max: a NaN operand is returned as it is, a first. */
float att_max(float a, float b)
{
	if (isnan(a))
		return a;
	if (isnan(b))
		return b;
	return b > a ? b : a;
}

#endif
