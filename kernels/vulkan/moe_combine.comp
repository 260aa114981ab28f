#version 450
#extension GL_GOOGLE_include_directive : require
/* moe_combine — out:buf@4! x:buf@4 w:buf@4 y:buf@4 tokens:u32 used:u32 n:u32
 * (src/ops/layer/moe.c): one invocation an element e = t * n + i: s = +0, then
 * s = s + w[t, k] * y[t, k, i] for k = 0 .. used - 1, then out = x + s (docs/ARITHMETIC.md,
 * "Mixture-of-experts kernels"). Each invocation reads its x before it writes its out, so out
 * may be x (the residual stream, in place). */
#include "xpu_vk.glsl"
#include "../moe.h"

layout(std430, set = 0, binding = 0) buffer Out { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer X { uint xs[]; };
layout(std430, set = 0, binding = 2) readonly buffer W { uint wts[]; };
layout(std430, set = 0, binding = 3) readonly buffer Y { uint ys[]; };
layout(push_constant) uniform Args {
	uint tokens, used, n;
	uint off_out, off_x, off_w, off_y;
} pc;

void main()
{
	uint e = xpu_group() * XPU_MOE_BLOCK + gl_LocalInvocationID.x;
	if (e >= pc.tokens * pc.n) /* tokens * n < 2^31: the extent refuses more */
		return;
	uint t = e / pc.n, i = e % pc.n, pair = t * pc.used;
	precise float s = 0.0;
	for (uint k = 0u; k < pc.used; k++) {
		precise float prod = uintBitsToFloat(wts[pc.off_w / 4u + pair + k]) *
				     uintBitsToFloat(ys[pc.off_y / 4u + (pair + k) * pc.n + i]);
		s = s + prod;
	}
	precise float o = uintBitsToFloat(xs[pc.off_x / 4u + e]) + s;
	dst[pc.off_out / 4u + e] = floatBitsToUint(o);
}
