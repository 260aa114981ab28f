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
	precise float acc = 0.0;
	for (uint t = 0u; t < dim; t++) {
		uint at = (base + t * inner) * elem;
		float v = shape_load_f(pc.off_in + at, dt);
		acc = t != 0u ? acc + v : v;
		shape_store_f(pc.off_out + at, dt, acc);
	}
}
