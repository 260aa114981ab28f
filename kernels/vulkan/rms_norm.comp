#version 450
#extension GL_GOOGLE_include_directive : require
/* rms_norm — out:buf@4! x:buf@4 weight:buf@4 rows:u32 cols:u32 eps:f32 dtype:u32
 * (src/ops/layer/norm.c): group g normalises row g, out = (x * (1 / sqrt(sum(x^2) / cols +
 * eps))) * weight, in docs/ARITHMETIC.md's order ("Row normalisation"). dtype f16: x and out
 * are f16 (cols even, so a row is whole words), x converted exactly, each result rounded once
 * (norm.glsl's nm_f16_bits); a word's two halves are staged in shared memory and stored by one
 * lane. */
#include "norm.glsl"

layout(std430, set = 0, binding = 0) writeonly buffer Out { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer X { uint xs[]; };
layout(std430, set = 0, binding = 2) readonly buffer W { uint ws[]; };
layout(push_constant) uniform Args {
	uint rows, cols;
	float eps;
	uint dtype;
	uint off_out, off_x, off_w;
} pc;

shared uint halves[XPU_NORM_BLOCK];

/* Element i of the row that starts at element `first` (even for f16). */
float load(uint first, uint i)
{
	if (pc.dtype == XPU_NORM_F16) {
		uint e = first + i, word = xs[pc.off_x / 4u + e / 2u];
		return xpu_f16((e & 1u) != 0u ? word >> 16 : word & 0xffffu);
	}
	return uintBitsToFloat(xs[pc.off_x / 4u + first + i]);
}

void main()
{
	uint g = xpu_group(), t = gl_LocalInvocationID.x, n = pc.cols, first = g * n;
	if (g >= pc.rows) /* the whole group leaves: no barrier is skipped by part of it */
		return;
	uint wi = pc.off_w / 4u;
	precise float acc = 0.0;
	for (uint i = t; i < n; i += XPU_NORM_BLOCK) {
		float v = load(first, i);
		acc = acc + v * v;
	}
	float rinv = nm_inv_root(nm_sum(acc), n, pc.eps);
	if (pc.dtype != XPU_NORM_F16) {
		for (uint i = t; i < n; i += XPU_NORM_BLOCK) {
			precise float y = (load(first, i) * rinv) * uintBitsToFloat(ws[wi + i]);
			dst[pc.off_out / 4u + first + i] = floatBitsToUint(y);
		}
		return;
	}
	for (uint base = 0u; base < n; base += XPU_NORM_BLOCK) { /* every lane makes every trip */
		uint i = base + t;
		if (i < n) {
			precise float y = (load(first, i) * rinv) * uintBitsToFloat(ws[wi + i]);
			halves[t] = nm_f16_bits(y);
		}
		barrier();
		if (2u * t < XPU_NORM_BLOCK && base + 2u * t < n)
			dst[pc.off_out / 4u + (first + base) / 2u + t] = halves[2u * t] | (halves[2u * t + 1u] << 16);
		barrier();
	}
}
