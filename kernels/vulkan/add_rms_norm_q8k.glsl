/* add_rms_norm_q8k.glsl — the body of add_rms_norm_q8k, xq:buf@4! sum:buf@4! x:buf@4
 * residual:buf@4 weight:buf@4 rows:u32 cols:u32 eps:f32, and (NORM_OUT) of add_rms_norm_q8k_f32,
 * xq:buf@4! out:buf@4! sum x residual weight rows cols eps (src/ops/layer/norm.c): group g writes
 * sum = x + residual for row g (add_rms_norm.comp's pass), then takes that sum through
 * rms_norm_q8k.comp's steps, each lane reading back the sums it wrote (so sum may be x or
 * residual themselves): the bytes of add followed by rms_norm_q8k. The _f32 form also writes each
 * normed value v = (sum * rinv) * weight, the one the pack quantizes, into out: the bytes of
 * rms_norm (f32) of the sum. docs/ARITHMETIC.md, "Row normalisation". */

#ifdef NORM_OUT
#define NQ_B 1 /* the bindings after xq move up one for out */
#else
#define NQ_B 0
#endif

layout(std430, set = 0, binding = 0) writeonly buffer Xq { uint xq[]; };
#ifdef NORM_OUT
layout(std430, set = 0, binding = 1) writeonly buffer Out { uint dst[]; };
#endif
layout(std430, set = 0, binding = 1 + NQ_B) coherent buffer Sum { uint hs[]; };
layout(std430, set = 0, binding = 2 + NQ_B) readonly buffer X { uint xs[]; };
layout(std430, set = 0, binding = 3 + NQ_B) readonly buffer R { uint rs[]; };
layout(std430, set = 0, binding = 4 + NQ_B) readonly buffer W { uint ws[]; };
layout(push_constant) uniform Args {
	uint rows, cols;
	float eps;
	uint off_xq;
#ifdef NORM_OUT
	uint off_out;
#endif
	uint off_sum, off_x, off_res, off_w;
} pc;

#include "q8k_block.glsl"

void main()
{
	uint g = xpu_group(), t = gl_LocalInvocationID.x, n = pc.cols;
	if (g >= pc.rows)
		return;
	uint xi = pc.off_x / 4u + g * n, ri = pc.off_res / 4u + g * n, hi = pc.off_sum / 4u + g * n;
	uint wi = pc.off_w / 4u, blocks = n / 256u;
	precise float acc = 0.0;
	for (uint i = t; i < n; i += XPU_NORM_BLOCK) {
		precise float h = uintBitsToFloat(xs[xi + i]) + uintBitsToFloat(rs[ri + i]);
		hs[hi + i] = floatBitsToUint(h);
		acc = acc + h * h;
	}
	float rinv = nm_inv_root(nm_sum(acc), n, pc.eps);
	for (uint b = 0u; b < blocks; b++) {
		uint i = b * 256u + t, oi = pc.off_xq / 4u + (g * blocks + b) * 80u;
		precise float v = (uintBitsToFloat(hs[hi + i]) * rinv) * uintBitsToFloat(ws[wi + i]);
#ifdef NORM_OUT
		dst[pc.off_out / 4u + g * n + i] = floatBitsToUint(v); /* lane t: element t of block b */
#endif
		q8k_block_pack(oi, t, v);
	}
}
