#version 450
#extension GL_GOOGLE_include_directive : require
/* norm_steps — out:buf@4! x:buf@4 n:u32 d:f32 (src/ops/layer/norm.c): item i (group * block +
 * lane) writes out[3i] = sqrt(x[i]), out[3i + 1] = 1 / x[i], out[3i + 2] = x[i] / d, by
 * norm.glsl's correctly rounded steps, for the specs to hold against the host's. */
#include "norm.glsl"

layout(std430, set = 0, binding = 0) writeonly buffer Out { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer X { uint xs[]; };
layout(push_constant) uniform Args {
	uint n;
	float d;
	uint off_out, off_x;
} pc;

void main()
{
	uint i = xpu_group() * WG_SIZE + xpu_thread();
	if (i >= pc.n)
		return;
	float x = uintBitsToFloat(xs[pc.off_x / 4u + i]);
	uint o = pc.off_out / 4u + 3u * i;
	dst[o] = floatBitsToUint(nm_sqrt(x));
	dst[o + 1u] = floatBitsToUint(nm_div(1.0, x));
	dst[o + 2u] = floatBitsToUint(nm_div(x, pc.d));
}
