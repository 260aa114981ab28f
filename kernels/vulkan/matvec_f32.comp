#version 450
#extension GL_GOOGLE_include_directive : require
/* matvec_f32 — y:buf@4! w:buf@4 x:buf@4 rows:u32 cols:u32 tokens:u32 (src/ops/layer/moe.c):
 * y[t, r] = w[r, :] . x[t, :], one (virtual) wave of 32 a (token, row) pair, XPU_MV32_WAVES
 * pairs a group. Lane l adds the products of columns l, l + 32, ... in order from +0, then
 * workgroup.glsl's wave butterfly adds the lanes (docs/ARITHMETIC.md, "Mixture-of-experts
 * kernels"). A wave past the last pair still makes every trip (the butterfly's barriers) and
 * reads and stores nothing. */
#include "workgroup.glsl"
#include "../moe.h"

layout(std430, set = 0, binding = 0) writeonly buffer Y { uint ys[]; };
layout(std430, set = 0, binding = 1) readonly buffer W { uint ws[]; };
layout(std430, set = 0, binding = 2) readonly buffer X { uint xs[]; };
layout(push_constant) uniform Args {
	uint rows, cols, tokens;
	uint off_y, off_w, off_x;
} pc;

void main()
{
	uint me = gl_LocalInvocationID.x, lane = me % XPU_WG_WAVE;
	uint p = xpu_group() * XPU_MV32_WAVES + me / XPU_WG_WAVE;
	bool live = p < pc.rows * pc.tokens; /* rows * tokens < 2^31: the extent refuses more */
	uint wi = pc.off_w / 4u + (live ? (p % pc.rows) * pc.cols : 0u);
	uint xi = pc.off_x / 4u + (live ? (p / pc.rows) * pc.cols : 0u);
	precise float acc = 0.0;
	if (live)
		for (uint c = lane; c < pc.cols; c += XPU_WG_WAVE) {
			precise float prod = uintBitsToFloat(ws[wi + c]) * uintBitsToFloat(xs[xi + c]);
			acc = acc + prod;
		}
	float s = uintBitsToFloat(wg_wave_reduce(XPU_WG_ADD, XPU_WG_F32, uvec2(floatBitsToUint(acc), 0u)).x);
	if (live && lane == 0u)
		ys[pc.off_y / 4u + p] = floatBitsToUint(s);
}
