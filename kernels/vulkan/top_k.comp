#version 450
#extension GL_GOOGLE_include_directive : require
/* top_k — ids:buf@4! weights:buf@4! x:buf@4 rows:u32 n_expert:u32 k:u32 norm:u32
 * (src/ops/layer/select.c): one wave (XPU_TOPK_BLOCK lanes) a row; lane t holds experts
 * t, t + 32, ... (at most 8). k rounds of the workgroup max over the untaken keys give the
 * ids, best first (a NaN above every number, ties to the lower index). Weights: e_s =
 * xm_exp(x_s - x_0); the sum over the k in order (norm 1) or over all experts, lane t adding
 * its experts in order and the wave's butterfly adding the lanes (norm 0); e_s / sum
 * correctly rounded (fdiv.glsl); a NaN weight is written as the one quiet NaN. */
#include "select.glsl"
#include "fdiv.glsl"
#include "../xmath.h"

layout(std430, set = 0, binding = 0) buffer Ids { uint ids[]; };
layout(std430, set = 0, binding = 1) buffer Weights { uint wts[]; };
layout(std430, set = 0, binding = 2) readonly buffer X { uint src[]; };
layout(push_constant) uniform Args {
	uint rows, n_expert, k, norm;
	uint off_ids, off_weights, off_x;
} pc;

#define PER (XPU_TOPK_MAX_EXPERTS / XPU_TOPK_BLOCK)

float weight(float e, float sum)
{
	if (sel_nan_bits(floatBitsToUint(e)) || sel_nan_bits(floatBitsToUint(sum)))
		return uintBitsToFloat(XPU_SEL_BAD_ROW);
	if (e == 0.0)
		return 0.0;
	return fdiv_rn(e, sum);
}

/* The sum of xm_exp(x_j - m) over the row: lane t's experts in order, then the lanes. */
float sum_all(uint at, uint t, float m)
{
	precise float lane = 0.0;
	for (uint j = t; j < pc.n_expert; j += XPU_TOPK_BLOCK) {
		precise float d = uintBitsToFloat(src[at + j]) - m;
		lane = lane + xm_exp(d);
	}
	return uintBitsToFloat(workgroup_reduce(XPU_WG_ADD, XPU_WG_F32, uvec2(floatBitsToUint(lane), 0u)).x);
}

void main()
{
	uint r = xpu_group(), t = gl_LocalInvocationID.x;
	if (r >= pc.rows) /* the whole group leaves: no barrier is skipped by part of it */
		return;
	uint at = pc.off_x / 4u + r * pc.n_expert, taken = 0u, pick[XPU_TOPK_MAX_K];
	for (uint s = 0u; s < pc.k; s++) {
		uvec2 best = wg_identity(XPU_WG_MAX, XPU_WG_I64);
		for (uint q = 0u; q < PER; q++) {
			uint j = t + q * XPU_TOPK_BLOCK;
			if (j < pc.n_expert && (taken & (1u << q)) == 0u)
				best = wg_op_i64(XPU_WG_MAX, best, sel_key(src[at + j], j));
		}
		best = workgroup_reduce(XPU_WG_MAX, XPU_WG_I64, best);
		pick[s] = sel_index(best);
		if (pick[s] % XPU_TOPK_BLOCK == t)
			taken |= 1u << (pick[s] / XPU_TOPK_BLOCK);
	}
	float m = uintBitsToFloat(src[at + pick[0]]);
	float sum = 0.0;
	if (pc.norm == XPU_TOPK_NORM_ALL)
		sum = sum_all(at, t, m);
	if (t != 0u)
		return;
	float e[XPU_TOPK_MAX_K];
	precise float run = 0.0;
	for (uint s = 0u; s < pc.k; s++) {
		precise float d = uintBitsToFloat(src[at + pick[s]]) - m;
		e[s] = xm_exp(d);
		run = run + e[s];
	}
	if (pc.norm == XPU_TOPK_NORM_K)
		sum = run;
	for (uint s = 0u; s < pc.k; s++) {
		ids[pc.off_ids / 4u + r * pc.k + s] = pick[s];
		wts[pc.off_weights / 4u + r * pc.k + s] = floatBitsToUint(weight(e[s], sum));
	}
}
