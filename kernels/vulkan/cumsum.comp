#version 450
#extension GL_GOOGLE_include_directive : require
/* cumsum — out:buf! in:buf outer:u64 dim:u64 inner:u64 dtype:u32 (kernels/table_shape.c).
 * Item `lane` (o, i) scans along dim sequentially from the first element, as the CPU body:
 * f32 adds natively (`precise`: no contraction), f16 and bf16 widen to f32, add in f32 and
 * round to nearest even once per stored element. f64 (dtype 1) needs shaderFloat64, which
 * the backend does not enable: the contract refuses it, and this body writes nothing for it. */
layout(std430, set = 0, binding = 0) buffer Out { uint dst[]; };
layout(std430, set = 0, binding = 1) readonly buffer In { uint src[]; };
layout(push_constant) uniform Args {
	uvec2 outer, dim, inner;
	uint dtype;
	uint off_out, off_in;
} pc;

#define SHAPE_DST dst
#define SHAPE_SRC src
#include "shape_ops.glsl"

void main()
{
	uint dim = u64_sat(pc.dim), inner = u64_sat(pc.inner), dt = pc.dtype, lane = shape_item();
	if (lane >= u64_sat(pc.outer) * inner || dt == 1u || dt > 3u)
		return;
	uint elem = dt == 0u ? 4u : 2u, base = (lane / inner) * dim * inner + lane % inner;
	/* Four loads ahead of their adds and stores, written out (the float adds stay out of an
	 * [[unroll]] loop, whose copies glslc strips of `precise`), so a lane has four loads in
	 * flight where a step at a time it would wait on each. The adds keep the CPU's order. */
	uint step = inner * elem, t = 0u, at = base * elem;
	precise float acc = 0.0;
	for (; t + 4u <= dim; t += 4u, at += 4u * step) {
		float v0 = shape_load_f(pc.off_in + at, dt), v1 = shape_load_f(pc.off_in + at + step, dt);
		float v2 = shape_load_f(pc.off_in + at + 2u * step, dt), v3 = shape_load_f(pc.off_in + at + 3u * step, dt);
		acc = t != 0u ? acc + v0 : v0;
		shape_store_f(pc.off_out + at, dt, acc);
		acc = acc + v1;
		shape_store_f(pc.off_out + at + step, dt, acc);
		acc = acc + v2;
		shape_store_f(pc.off_out + at + 2u * step, dt, acc);
		acc = acc + v3;
		shape_store_f(pc.off_out + at + 3u * step, dt, acc);
	}
	for (; t < dim; t++, at += step) {
		float v = shape_load_f(pc.off_in + at, dt);
		acc = t != 0u ? acc + v : v;
		shape_store_f(pc.off_out + at, dt, acc);
	}
}
