#version 450
#extension GL_GOOGLE_include_directive : require
/* rms_norm_q8k — xq:buf@4! x:buf@4 weight:buf@4 rows:u32 cols:u32 eps:f32
 * (src/ops/layer/norm.c): group g takes row g through rms_norm's steps (rms_norm.comp) and packs
 * each 256 values of the result as q8k_pack does (q8k.glsl: the same steps), so the bytes are
 * those of rms_norm followed by q8k_pack. Lane t holds element t of every block: amax is the
 * workgroup max of |v| (NaN left out), the eight sums those of the eight waves' values. */

layout(std430, set = 0, binding = 0) writeonly buffer Xq { uint xq[]; };
layout(std430, set = 0, binding = 1) readonly buffer X { uint xs[]; };
layout(std430, set = 0, binding = 2) readonly buffer W { uint ws[]; };
layout(push_constant) uniform Args {
	uint rows, cols;
	float eps;
	uint off_xq, off_x, off_w;
} pc;

#include "q8k_block.glsl"

void main()
{
	uint g = xpu_group(), t = gl_LocalInvocationID.x, n = pc.cols;
	if (g >= pc.rows)
		return;
	uint xi = pc.off_x / 4u + g * n, wi = pc.off_w / 4u, blocks = n / 256u;
	precise float acc = 0.0;
	for (uint i = t; i < n; i += XPU_NORM_BLOCK) {
		float v = uintBitsToFloat(xs[xi + i]);
		acc = acc + v * v;
	}
	float rinv = nm_inv_root(nm_sum(acc), n, pc.eps);
	for (uint b = 0u; b < blocks; b++) {
		uint i = b * 256u + t, oi = pc.off_xq / 4u + (g * blocks + b) * 80u;
		precise float v = (uintBitsToFloat(xs[xi + i]) * rinv) * uintBitsToFloat(ws[wi + i]);
		q8k_block_pack(oi, t, v);
	}
}
