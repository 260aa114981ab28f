#version 450
#extension GL_GOOGLE_include_directive : require
/* pad_backward — grad:buf! up:buf geom:u64 d01..d67 b01..b67 a01..a67 (kernels/table_shape.c).
 * Item e (a gradient element) sums the upstream positions that pad read it into, in
 * ascending upstream index from the first term, as the CPU body: the product of each axis's
 * preimage (reflect: left mirror, interior, right mirror) walked by an odometer, the last axis
 * fastest. f32, f16, bf16 accumulate in f32 (`precise`) and narrow once on store. f64 (dtype
 * 1) needs shaderFloat64, which the backend does not enable: the contract refuses it, and this
 * body writes nothing for it. */
layout(std430, set = 0, binding = 0) buffer Grad { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer Up { uint src[]; };
layout(push_constant) uniform Args {
	uvec2 geom;
	uvec2 w[12]; /* dims (of the gradient), before, after: eight u32 each */
	uint off_grad, off_up;
} pc;

#define SHAPE_DST dst
#define SHAPE_SRC src
#include "shape_ops.glsl"

/* Gradient element e, which pad read into more than one upstream position on some axis: the
 * sum over the product of each axis's preimage, by an odometer (local arrays: the slow path). */
void pad_bwd_terms(uint e, uint rank, uint dt, uint mode, uint elem)
{
	uint od[8], rlo[8][3], rhi[8][3], pos[8];
	int nr[8], ri[8];
	uint rem = e;
	for (int k = int(rank) - 1; k >= 0; k--) {
		uint d = SHAPE_U32(pc.w, 0u, uint(k)), b = SHAPE_U32(pc.w, 4u, uint(k));
		uint after = SHAPE_U32(pc.w, 8u, uint(k)), i = rem % d;
		rem /= d;
		od[k] = d + b + after;
		int m = 0;
		if (mode == 2u) {
			rlo[k][0] = i == 0u ? 0u : i + b;
			rhi[k][0] = i == d - 1u ? od[k] : i + b + 1u;
			m = 1;
		} else {
			if (mode == 1u && i >= 1u && i <= b) {
				rlo[k][m] = b - i;
				rhi[k][m] = b - i + 1u;
				m++;
			}
			rlo[k][m] = i + b;
			rhi[k][m] = i + b + 1u;
			m++;
			if (mode == 1u && i + 2u <= d && d - 1u - i <= after) {
				rlo[k][m] = b + 2u * (d - 1u) - i;
				rhi[k][m] = rlo[k][m] + 1u;
				m++;
			}
		}
		nr[k] = m;
		ri[k] = 0;
		pos[k] = rlo[k][0];
	}
	precise float acc = 0.0;
	for (bool first = true;; first = false) {
		uint off = 0u;
		for (uint k = 0u; k < rank; k++)
			off = off * od[k] + pos[k];
		float v = shape_load_f(pc.off_up + off * elem, dt);
		acc = first ? v : acc + v;
		int k = int(rank) - 1; /* odometer: the last axis turns fastest */
		for (; k >= 0; k--) {
			if (++pos[k] < rhi[k][ri[k]])
				break;
			if (++ri[k] < nr[k]) {
				pos[k] = rlo[k][ri[k]];
				break;
			}
			ri[k] = 0;
			pos[k] = rlo[k][0];
		}
		if (k < 0)
			break;
	}
	shape_store_f(pc.off_grad + e * elem, dt, acc);
}

/* Item e, one of this invocation's (shape_item_at). Most gradient elements were read into one
 * upstream position only (interior on every axis): that one term is loaded straight, without
 * the odometer's arrays, and stored as the sum of one term is (widened, narrowed back). */
void shape_body(uint e)
{
	uint rank = pc.geom.x & 255u, dt = (pc.geom.x >> 8) & 255u, mode = (pc.geom.x >> 16) & 255u;
	uint n = 1u;
	if (dt == 1u || dt > 3u)
		return;
	uint elem = dt == 0u ? 4u : 2u;
	for (uint k = 0u; k < rank; k++)
		n *= SHAPE_U32(pc.w, 0u, k);
	if (e >= n)
		return;
	uint rem = e, off = 0u, stride = 1u;
	bool one = true;
	for (int k = int(rank) - 1; k >= 0; k--) {
		uint d = SHAPE_U32(pc.w, 0u, uint(k)), b = SHAPE_U32(pc.w, 4u, uint(k));
		uint after = SHAPE_U32(pc.w, 8u, uint(k)), i = rem % d;
		rem /= d;
		if (mode == 2u)
			one = one && (i != 0u || b == 0u) && (i != d - 1u || after == 0u);
		else if (mode == 1u)
			one = one && !(i >= 1u && i <= b) && !(i + 2u <= d && d - 1u - i <= after);
		off += (i + b) * stride;
		stride *= d + b + after;
	}
	if (!one) {
		pad_bwd_terms(e, rank, dt, mode, elem);
		return;
	}
	precise float v = shape_load_f(pc.off_up + off * elem, dt);
	shape_store_f(pc.off_grad + e * elem, dt, v);
}

void main()
{
	for (uint t = 0u; t < uint(XPU_SHAPE_GRAIN); t++)
		shape_body(shape_item_at(t));
}
